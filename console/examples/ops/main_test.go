package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServes runs the program on a loopback port, reads the overview, and stops it.
func TestServes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln) }()
	res, err := http.Get("http://" + ln.Addr().String() + "/ops/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-queue="emails"`) ||
		!strings.Contains(string(page), `data-queue="billing"`) || !strings.Contains(string(page), `data-share="workers"`) {
		t.Errorf("overview: %s, want both queues and their Share", res.Status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
