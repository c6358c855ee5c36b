// Package docs holds Cellcast's documentation: README.md at the root of the
// repository and the Markdown pages and figures of this directory. It has
// no code; its test checks that every relative link and image in those
// pages names a file of the repository, so that a person who clones it
// finds everything the pages point to, and that no page points outside it.
package docs
