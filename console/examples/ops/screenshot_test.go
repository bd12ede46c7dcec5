package main

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScreenshot makes the README's picture of the console: with CORRAL_SCREENSHOT set to a
// file name, it runs the program for a few seconds of traffic and writes a PNG of the overview
// there, taken by headless chromium. Without it, it is skipped.
//
//	cd console && CORRAL_SCREENSHOT=$PWD/../docs/console.png go test -run Screenshot ./examples/ops
func TestScreenshot(t *testing.T) {
	out := os.Getenv("CORRAL_SCREENSHOT")
	if out == "" {
		t.Skip("set CORRAL_SCREENSHOT to a file name to make the README's screenshot")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = run(ctx, ln) })
	defer wg.Wait()
	defer cancel()

	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath("/usr/bin/chromium"),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 760))
	defer cancelAlloc()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, time.Minute)
	defer cancelT()
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+ln.Addr().String()+"/ops/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-updates="8"]`))); err != nil { // eight live updates: the charts have lines
		t.Fatal(err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
