package main

import (
	"log/slog"
	"net/http"
	"time"
)

// serverLimits bounds what one HTTP client can hold: a client that sends its
// headers or body slowly, or keeps an idle connection, is dropped after these.
type serverLimits struct {
	readHeaderTimeout time.Duration
	readTimeout       time.Duration // the whole request, body included
	writeTimeout      time.Duration // from the end of the headers to the end of the response
	idleTimeout       time.Duration
	maxHeaderBytes    int
	maxBodyBytes      int64
}

// withDefaults fills zero or negative fields. The write timeout is longer than
// the 10 s an order may take to store, so a slow database gets a 503, not a
// dropped connection.
func (l serverLimits) withDefaults() serverLimits {
	set := func(value *time.Duration, fallback time.Duration) {
		if *value <= 0 {
			*value = fallback
		}
	}
	set(&l.readHeaderTimeout, 5*time.Second)
	set(&l.readTimeout, 10*time.Second)
	set(&l.writeTimeout, 15*time.Second)
	set(&l.idleTimeout, 60*time.Second)
	if l.maxHeaderBytes <= 0 {
		l.maxHeaderBytes = 16 << 10
	}
	if l.maxBodyBytes <= 0 {
		l.maxBodyBytes = 16 << 10
	}
	return l
}

func newServer(handler http.Handler, limits serverLimits, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: limits.readHeaderTimeout,
		ReadTimeout:       limits.readTimeout,
		WriteTimeout:      limits.writeTimeout,
		IdleTimeout:       limits.idleTimeout,
		MaxHeaderBytes:    limits.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
