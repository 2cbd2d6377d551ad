package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/companionhq/companion/internal/app"
)

// serve builds the service and serves it until ctx ends.
func serve(ctx context.Context, cfg app.Config, level slog.Level, stderr io.Writer) error {
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: readableDurations}))
	// go-redis logs through a logger of its own, to stderr by default: route
	// it into ours, where a Redis outage is already reported once.
	redis.SetLogger(redisLog{log})
	cfg.Telemetry.ServiceVersion, _ = buildInfo()
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Server.Addr, err)
	}
	var metrics net.Listener
	if cfg.Server.MetricsAddr != "" {
		if metrics, err = net.Listen("tcp", cfg.Server.MetricsAddr); err != nil {
			ln.Close()
			return fmt.Errorf("listening on %s for metrics: %w", cfg.Server.MetricsAddr, err)
		}
	}
	// SIGHUP re-reads the API keys file: keys rotate without a restart.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				_ = a.ReloadCredentials()
			case <-ctx.Done():
				return
			}
		}
	}()
	return a.Serve(ctx, ln, metrics)
}

// readableDurations writes durations as Go duration strings ("30s",
// "1.5ms"), which people read, rather than JSON's nanoseconds.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// redisLog is go-redis's logger on our log, at debug level.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
