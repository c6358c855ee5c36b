package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// Subscribe to a cell for the last minute and the next five, and print
// what arrives until the window ends. The client reconnects and resumes
// by itself, so nothing is lost if the connection drops meanwhile.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{UID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.4"), Past: time.Minute, Future: 5 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range sub.Past {
		fmt.Println("earlier:", p.Desc)
	}
	for n := range sub.C {
		fmt.Println(n.Seq, n.Publication.Cell, n.Publication.Desc)
	}
	fmt.Println("ended:", sub.Err())
}

// Subscribe with a handler, around a point, for publications whose
// description mentions "flood".
func ExampleClient_Subscribe_handler() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{UID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{
		Location: client.Circle(40.758, -73.9855, 500),
		Future:   time.Minute,
		Filter:   &client.Filter{Keyword: "flood"},
		Handler:  func(n client.Notification) { fmt.Println(n.Publication.Desc) },
	})
	if err != nil {
		log.Fatal(err)
	}
	<-sub.Done()
}

// Publish, backing off while the broker says it is overloaded.
func ExampleClient_Publish() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{Token: "a-token-of-16-chars-or-more"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for {
		p, err := c.Publish(ctx, client.PublishRequest{Location: client.Topic("traffic/nyc"), Expires: time.Minute, Desc: "road closed"})
		var e *client.Error
		if errors.Is(err, client.ErrOverloaded) && errors.As(err, &e) {
			time.Sleep(e.RetryAfter)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.Pid, "matched", p.Matched)
		return
	}
}

// The ten latest publications of a category.
func ExampleClient_Query() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{UID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Query(ctx, client.QueryRequest{Attr: "category", Eq: "traffic", K: 10})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Publications {
		fmt.Println(p.Tp.Format(time.TimeOnly), p.Desc)
	}
}
