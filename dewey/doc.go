// Package dewey holds Cellcast's hierarchical ids in Dewey notation (1.4.2):
// parsing and printing, the tree relations the matching rule needs, and an
// order-preserving binary encoding under which a cell's whole subtree is one
// contiguous key range. It also maps the world onto ids: a quad tree over a
// bounding box (points, boxes, circles and their covers), the flat grid of
// the thesis experiments, and a registry of topic paths.
//
// The package imports nothing of Cellcast; the topic registry persists
// through the small TopicStore interface that the storage side implements
// (a cluster's, SharedTopicStore, is written by several processes at once:
// NewSharedTopics numbers topics by a hash of their names instead).
package dewey
