package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// WritePNGs renders each chart's SVG file (charts/<name>.svg under dir, as Write wrote
// it) to charts/<name>.png at the chart's size with headless Chromium at browser, and
// returns the paths written.
func WritePNGs(ctx context.Context, browser, dir string, charts []Chart) ([]string, error) {
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
		png := filepath.Join(dir, ChartsDir, c.Name+".png")
		tmp := png + ".tmp.png"
		args := ChromiumArgs(profile, fmt.Sprintf("--window-size=%d,%d", c.Width, c.Height), "--screenshot="+tmp, "file://"+svg)
		if msg, err := exec.CommandContext(ctx, browser, args...).CombinedOutput(); err != nil {
			os.Remove(tmp)
			return nil, fmt.Errorf("chromium: render %s: %w\n%s", svg, err, tail(msg))
		}
		if err := os.Rename(tmp, png); err != nil {
			return nil, err
		}
		out = append(out, png)
	}
	return out, nil
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}
