package gateway

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's Prometheus series.
type Metrics struct {
	Requests      *prometheus.CounterVec // transport, op, outcome (ok or an error code)
	Notifications *prometheus.CounterVec // transport
	PushLatency   prometheus.Histogram   // publication stamp to the write of its notification
	Connections   *prometheus.GaugeVec   // transport
	QueueDrops    prometheus.Counter     // notifications a full send queue refused (replayed on catch-up)
	Cuts          *prometheus.CounterVec // connections cut, by reason
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
			Name: "cellcast_send_queue_drops_total", Help: "Notifications refused by a full send queue (replayed from the store once it drains).",
		}),
		Cuts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cellcast_connections_cut_total", Help: "Connections the broker closed because the client stopped reading, by reason: send_queue_full, write_timeout, write_failed.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.Requests, m.Notifications, m.PushLatency, m.Connections, m.QueueDrops, m.Cuts)
	return m
}
