package main

import (
	"bytes"
	"context"
	pngpkg "image/png"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScreenshot runs the program for a few seconds of traffic and takes a PNG of the overview
// in headless chromium once the page has had eight live updates: the picture must decode, as
// wide as the window. With CORRAL_SCREENSHOT set to a file name it writes the picture there,
// which is how the README's picture is made:
//
//	cd console && CORRAL_SCREENSHOT=$PWD/../docs/console.png go test -run Screenshot ./examples/ops
func TestScreenshot(t *testing.T) {
	out := os.Getenv("CORRAL_SCREENSHOT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "console.png")
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
	img, err := pngpkg.Decode(bytes.NewReader(png))
	if err != nil {
		t.Fatalf("the screenshot does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dx() > 1100 || b.Dy() < 400 {
		t.Errorf("screenshot %dx%d, want the 1100-pixel window's page (a scrollbar less), at least 400 high", b.Dx(), b.Dy())
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
