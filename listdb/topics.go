package listdb

import (
	"fmt"

	"github.com/seed84792017/cellcast/dewey"
)

// topicStore keeps the topic registry under 'r' + path.
type topicStore struct{ db MetaStore }

func (t topicStore) LoadTopics(fn func(string, dewey.ID) error) error {
	return t.db.Scan([]byte("r/"), []byte("r0"), func(k, v []byte) error {
		id, err := dewey.Decode(v)
		if err != nil {
			return fmt.Errorf("topic %q: %w", k[2:], err)
		}
		return fn(string(k[2:]), id)
	})
}

func (t topicStore) SaveTopic(path string, id dewey.ID) error {
	return t.db.Set(append([]byte("r/"), path...), id.Encode())
}
