package gateway

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's Prometheus series.
type Metrics struct {
	Requests      *prometheus.CounterVec // transport, op, outcome (ok or an error code)
	Notifications *prometheus.CounterVec // transport
	PushLatency   prometheus.Histogram   // publication stamp to the write of its notification
	Connections   *prometheus.GaugeVec   // transport
	QueueDrops    prometheus.Counter     // notifications a full send queue refused
	SlowCuts      prometheus.Counter     // connections cut for a full send queue
	CatalogErrors prometheus.Counter     // publications stored but not catalogued
}

// NewMetrics registers the gateway's series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cellcast_requests_total", Help: "Requests by transport, operation and outcome.",
		}, []string{"transport", "op", "outcome"}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cellcast_notifications_sent_total", Help: "Notifications written to clients.",
		}, []string{"transport"}),
		PushLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cellcast_publish_to_push_seconds", Help: "From a publication's stamp to the write of one of its notifications.",
			// 0.1 ms to 25 s, each bucket 1.5× the last.
			Buckets: prometheus.ExponentialBuckets(0.0001, 1.5, 31),
		}),
		Connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cellcast_connections", Help: "Open client connections.",
		}, []string{"transport"}),
		QueueDrops: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cellcast_send_queue_drops_total", Help: "Notifications refused by a full send queue (the client resumes to get them).",
		}),
		SlowCuts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cellcast_slow_consumer_cuts_total", Help: "Connections closed because their send queue was full.",
		}),
		CatalogErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cellcast_catalog_errors_total", Help: "Publications stored and delivered that the catalog failed to record (queries miss them).",
		}),
	}
	reg.MustRegister(m.Requests, m.Notifications, m.PushLatency, m.Connections, m.QueueDrops, m.SlowCuts, m.CatalogErrors)
	return m
}
