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
// what arrives until the window ends. The cell is of the S2 world grid,
// level 4 (some 600 km across) over New York: face 4 plus one, then a
// child position plus one per level. The client reconnects and resumes
// by itself, so nothing is lost if the connection drops meanwhile.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{UID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("5.2.1.4.3"), Past: time.Minute, Future: 5 * time.Minute})
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

// Publish an incident over a polygon, a GeoJSON geometry ([lng, lat]
// positions, the ring closed), on at most four cells: it reaches the
// subscriptions whose places meet the polygon itself.
func ExamplePolygon() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{UID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	bryantPark := client.Polygon([]byte(`{"type":"Polygon","coordinates":[[[-73.986,40.752],[-73.981,40.752],[-73.981,40.755],[-73.986,40.755],[-73.986,40.752]]]}`))
	p, err := c.Publish(ctx, client.PublishRequest{Location: bryantPark.Cover(4), Expires: time.Hour, Desc: "closed for an event"})
	if err != nil {
		log.Fatal(err) // a bad polygon: an *Error with code bad_request naming what is wrong
	}
	fmt.Println(p.Pid, "on", p.Cover, "matched", p.Matched)
}

// The ten latest traffic incidents within a kilometre of Times Square in
// the last hour.
func ExampleClient_QueryPlace() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/ws", client.Options{UID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.QueryPlace(ctx, client.PlaceQuery{
		Place: client.Circle(40.758, -73.9855, 1000),
		From:  time.Now().Add(-time.Hour),
		Attr:  "category",
		Eq:    "traffic",
		K:     10,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range res.Publications {
		switch {
		case p.At != nil:
			fmt.Printf("%s at %.5f,%.5f: %s\n", p.Tp.Format(time.TimeOnly), p.At.Lat, p.At.Lng, p.Desc)
		case p.Polygon != nil:
			fmt.Printf("%s over %s: %s\n", p.Tp.Format(time.TimeOnly), p.Polygon, p.Desc)
		default:
			fmt.Printf("%s in cell %s: %s\n", p.Tp.Format(time.TimeOnly), p.Cell, p.Desc)
		}
	}
}
