package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/companionhq/companion/internal/app"
)

// serve builds the service and serves it until ctx ends.
func serve(ctx context.Context, cfg app.Config, level slog.Level, stderr io.Writer) error {
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Version = version()
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	return a.Serve(ctx, ln)
}
