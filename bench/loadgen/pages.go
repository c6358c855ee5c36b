package loadgen

// pages joins paged replies (docs/protocol.md, "Paged results"): a reply
// with more set is held, and page frames with its id add their results to
// it until the last one.
type pages map[string]*reply

// add files rep. It returns the whole reply once its last page is in, or
// rep itself when it is not part of a paged reply (a page frame nobody
// waits for included: the caller finds no request for it).
func (p *pages) add(rep *reply) (*reply, bool) {
	if rep.Op == "page" {
		first := (*p)[rep.ID]
		if first == nil {
			return rep, true
		}
		first.Results = append(first.Results, rep.Results...)
		if rep.More {
			return nil, false
		}
		delete(*p, rep.ID)
		return first, true
	}
	if rep.More {
		if *p == nil {
			*p = pages{}
		}
		(*p)[rep.ID] = rep
		return nil, false
	}
	return rep, true
}
