package docs

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^\\s*(```|~~~)")
	// codeSpan is inline code, which holds no links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// inline is a link or an image: [text](target) or ![alt](target "title").
	inline = regexp.MustCompile(`!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// reference is a link reference definition: [id]: target.
	reference = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// html is a src or href attribute of an HTML tag.
	html = regexp.MustCompile(`<(?:img|a|source)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']`)
)

// forbidden are strings no page may contain: they point into a private
// workspace that a person who clones the repository does not have.
var forbidden = []string{"../shared", "DESIGN.md"}

// links returns the targets of the links, images and reference definitions
// in a Markdown page, leaving out code blocks and inline code.
func links(text string) []string {
	var prose strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if !inFence {
			prose.WriteString(line)
			prose.WriteByte('\n')
		}
	}
	body := codeSpan.ReplaceAllString(prose.String(), "")
	var out []string
	for _, re := range []*regexp.Regexp{inline, reference, html} {
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">"))
		}
	}
	return out
}

// external reports whether a target leaves the repository by design: a
// URL with a scheme (http, https, mailto, …) or a link within the page.
func external(target string) bool {
	if strings.HasPrefix(target, "#") {
		return true
	}
	u, err := url.Parse(target)
	return err == nil && u.Scheme != ""
}

// check returns what is wrong with one page's links: each relative target
// must name a file or directory under root (an anchor or a query is
// ignored), and no target may point outside root.
func check(root, page, text string) []string {
	var problems []string
	for _, s := range forbidden {
		if strings.Contains(text, s) {
			problems = append(problems, "mentions "+s+", which is not in the repository")
		}
	}
	for _, target := range links(text) {
		if external(target) {
			continue
		}
		path := target
		if i := strings.IndexAny(path, "#?"); i >= 0 {
			path = path[:i]
		}
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
		if path == "" {
			continue
		}
		var abs string
		if strings.HasPrefix(path, "/") {
			abs = filepath.Join(root, filepath.FromSlash(path))
		} else {
			abs = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			problems = append(problems, "links to "+target+", outside the repository")
			continue
		}
		if _, err := os.Stat(abs); err != nil {
			problems = append(problems, "links to "+target+", which is not in the repository")
		}
	}
	return problems
}

// pages returns README.md and every Markdown file under docs/.
func pages(t *testing.T, root string) []string {
	t.Helper()
	out := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLinksStayInTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository's root %s has no go.mod: %v", root, err)
	}
	for _, page := range pages(t, root) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, p := range check(root, page, string(text)) {
			t.Errorf("%s %s", rel, p)
		}
	}
}

func TestLinks(t *testing.T) {
	text := "See [the design](design.md#layers) and ![a plot](figures/a.svg \"A\").\n" +
		"A [link\nover two lines](other.md), a [site](https://example.com) and [here](#top).\n" +
		"`[not a link](code.md)` in code.\n" +
		"```\n[nor this](fenced.md)\n```\n" +
		"[ref]: <ref target.md>\n" +
		`<img src="figures/b.png" alt="">` + "\n"
	got := links(text)
	want := []string{"design.md#layers", "figures/a.svg", "other.md", "https://example.com", "#top", "ref target.md", "figures/b.png"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("links:\n got %q\nwant %q", got, want)
	}
}

func TestCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs", "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"README.md", "docs/design.md", "docs/figures/a.svg"} {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(f)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := filepath.Join(root, "docs", "page.md")
	for _, c := range []struct {
		text string
		bad  int
	}{
		{"[d](design.md) [a](design.md#layers) ![f](figures/a.svg) [r](../README.md) [w](https://x.org/y.md) [s](#s) [dir](figures/)", 0},
		{"[gone](missing.md)", 1},
		{"![gone](figures/missing.svg)", 1},
		{"[gone](missing.md#section)", 1},
		{"[out](../../elsewhere.md)", 1},
		{"[shared](../../shared/notes.md)", 2},
		{"see ../shared/papers for the paper", 1},
		{"as DESIGN.md says", 1},
		{"`[code](missing.md)`", 0},
	} {
		if got := check(root, page, c.text); len(got) != c.bad {
			t.Errorf("%q: %d problems %q, want %d", c.text, len(got), got, c.bad)
		}
	}
}
