package report

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/reactgen/reactgen/internal/chart"
)

// Chromium is where Debian's chromium package installs the browser (`make chromium`).
const Chromium = "/usr/bin/chromium"

// ChromiumArgs are the flags of a headless Chromium that reaches no network, keeps no
// state (profile is a fresh, empty directory) and needs no GPU or sandbox.
func ChromiumArgs(profile string, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + profile}, extra...)
}

// minWindow is the smallest window side WritePNGs asks Chromium for. Headless Chromium
// does not honour a window much smaller than this: at 720x118 its screenshot holds the
// title and nothing below it, at 720x92 it is all white. So the chart is drawn in a
// window of at least this size and the picture is cropped to the chart in Go.
const minWindow = 600

// WritePNGs renders each chart's SVG file (charts/<name>.svg under dir, as Write wrote
// it) to charts/<name>.png at the chart's size with headless Chromium at browser, and
// returns the paths written.
func WritePNGs(ctx context.Context, browser, dir string, charts []chart.Chart) ([]string, error) {
	if _, err := os.Stat(browser); err != nil {
		return nil, fmt.Errorf("rendering PNGs needs Chromium at %s (make chromium installs Debian's): %w", browser, err)
	}
	profile, err := os.MkdirTemp("", "reactgen-chromium-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	var out []string
	for _, c := range charts {
		svg, err := filepath.Abs(filepath.Join(dir, ChartsDir, c.Name+".svg"))
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, ChartsDir, c.Name+".png")
		if err := renderPNG(ctx, browser, profile, svg, dst, c.Width, c.Height); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

// renderPNG screenshots the SVG file svg in a window of at least minWindow a side, crops
// the picture to the chart's w x h box at the top left (where a standalone SVG document
// is drawn) and writes it to dst through a temporary file, so dst is either the old file
// or the whole new one.
func renderPNG(ctx context.Context, browser, profile, svg, dst string, w, h int) error {
	shot := dst + ".shot.png"
	defer os.Remove(shot)
	args := ChromiumArgs(profile, fmt.Sprintf("--window-size=%d,%d", max(w, minWindow), max(h, minWindow)), "--screenshot="+shot, "file://"+svg)
	if msg, err := exec.CommandContext(ctx, browser, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("chromium: render %s: %w\n%s", svg, err, tail(msg))
	}
	f, err := os.Open(shot)
	if err != nil {
		return fmt.Errorf("chromium: render %s: no screenshot: %w", svg, err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("chromium: render %s: read screenshot: %w", svg, err)
	}
	box := image.Rect(0, 0, w, h).Add(img.Bounds().Min)
	if !box.In(img.Bounds()) {
		return fmt.Errorf("chromium: render %s: screenshot is %dx%d, smaller than the chart's %dx%d", svg, img.Bounds().Dx(), img.Bounds().Dy(), w, h)
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return fmt.Errorf("chromium: render %s: screenshot of type %T cannot be cropped", svg, img)
	}
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := png.Encode(out, sub.SubImage(box)); err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return os.Rename(tmp, dst)
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}
