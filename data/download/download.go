// Package download fetches the public data sets of the paper's setup (HotpotQA's
// questions and Wikipedia abstracts, FEVER's claims and Wikipedia pages, the ReAct
// prompt files) from their publishers' addresses or from a mirror. A broken download
// resumes where it stopped (an HTTP range request); a file takes its name only after its
// size and SHA-256 sum match the table's, and a mismatch removes what was fetched;
// archives are unpacked beside themselves and then removed. It imports nothing of
// reactgen's: the data command builds the indexes afterwards.
//
// A finished file leaves a marker under <dir>/.reactgen-data/, so a second run skips it;
// one run at a time holds <dir>/.reactgen-data/lock.
package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// File is one file to fetch.
type File struct {
	Set    string `json:"set"`              // hotpotqa, fever or prompts: what --only names
	Path   string `json:"path"`             // where it goes under the output folder, slash-separated
	URL    string `json:"url"`              // the publisher's address
	Size   int64  `json:"size"`             // bytes
	SHA256 string `json:"sha256"`           // hex
	Unpack string `json:"unpack,omitempty"` // "", UnpackTarBz2 or UnpackZip
	Source string `json:"source,omitempty"` // what the file is and where its sum comes from
}

// The archive kinds File.Unpack names. An archive is unpacked into its own folder and
// then removed.
const (
	UnpackTarBz2 = "tar.bz2"
	UnpackZip    = "zip"
)

// Options configure Fetch.
type Options struct {
	Dir    string       // the output folder
	Mirror string       // a base URL: each file is fetched from Mirror + the path of its URL
	Client *http.Client // nil: a client with no overall timeout (the files are large)
	// Progress receives progress lines; nil discards them. Bar redraws one line per file
	// (a terminal) instead of writing a line every 10%.
	Progress io.Writer
	Bar      bool
	// Attempts is how often one run tries a file whose connection broke, resuming each
	// time (0: 3).
	Attempts int
}

// Result says what Fetch did with one file.
type Result struct {
	File    File
	Skipped bool  // already fetched and verified by an earlier run
	Fetched int64 // bytes received in this run
}

// MismatchError is a file whose size or sum differs from the table's.
type MismatchError struct {
	Path, URL      string
	What           string // "size" or "SHA-256"
	Got, Want      string
	RemovedPartial bool
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s from %s: %s is %s, want %s; the downloaded bytes were removed (run again to fetch it anew, or check --mirror)",
		e.Path, e.URL, e.What, e.Got, e.Want)
}

// URLFor is where f is fetched from: its URL, or the same path under mirror.
func URLFor(f File, mirror string) (string, error) {
	if mirror == "" {
		return f.URL, nil
	}
	u, err := url.Parse(f.URL)
	if err != nil {
		return "", fmt.Errorf("%s: %w", f.Path, err)
	}
	m, err := url.Parse(mirror)
	if err != nil || (m.Scheme != "http" && m.Scheme != "https") || m.Host == "" {
		return "", fmt.Errorf("--mirror %q: want an http or https URL", mirror)
	}
	return strings.TrimRight(mirror, "/") + u.Path, nil
}

// Select returns the files of the named sets, in table order; no names select all.
func Select(files []File, sets []string) ([]File, error) {
	if len(sets) == 0 {
		return files, nil
	}
	want := map[string]bool{}
	known := map[string]bool{}
	for _, f := range files {
		known[f.Set] = true
	}
	for _, s := range sets {
		if !known[s] {
			return nil, fmt.Errorf("--only %q: no such set (want %s)", s, strings.Join(Sets, ", "))
		}
		want[s] = true
	}
	var out []File
	for _, f := range files {
		if want[f.Set] {
			out = append(out, f)
		}
	}
	return out, nil
}

// Fetch fetches, verifies and unpacks files into o.Dir, skipping those an earlier run
// finished. It stops at the first failure, leaving a broken download's bytes for the
// next run to resume, and returns what it did so far.
func Fetch(ctx context.Context, files []File, o Options) ([]Result, error) {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	state := filepath.Join(o.Dir, ".reactgen-data")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lock(filepath.Join(state, "lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := checkSpace(o.Dir, files, state); err != nil {
		return nil, err
	}
	var results []Result
	for _, f := range files {
		if err := checkEntry(f); err != nil {
			return results, err
		}
		marker := filepath.Join(state, filepath.FromSlash(f.Path)+".sha256")
		if done(marker, f) {
			results = append(results, Result{File: f, Skipped: true})
			fmt.Fprintf(o.Progress, "%s: already fetched and verified\n", f.Path)
			continue
		}
		n, err := fetchOne(ctx, f, o)
		results = append(results, Result{File: f, Fetched: n})
		if err != nil {
			return results, err
		}
		if f.Unpack != "" {
			fmt.Fprintf(o.Progress, "%s: unpacking\n", f.Path)
			if err := unpack(ctx, filepath.Join(o.Dir, filepath.FromSlash(f.Path)), f.Unpack); err != nil {
				return results, fmt.Errorf("unpack %s: %w", f.Path, err)
			}
		}
		if err := writeMarker(marker, f.SHA256); err != nil {
			return results, err
		}
	}
	return results, nil
}

// checkEntry refuses a table entry that would write outside the output folder.
func checkEntry(f File) error {
	p := filepath.FromSlash(f.Path)
	if f.Path == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return fmt.Errorf("file %q: its path must stay inside the output folder", f.Path)
	}
	if len(f.SHA256) != 64 || f.Size <= 0 {
		return fmt.Errorf("file %s: the table needs its size and SHA-256 sum", f.Path)
	}
	return nil
}

// done reports whether an earlier run fetched f (and unpacked it) with this sum.
func done(marker string, f File) bool {
	b, err := os.ReadFile(marker)
	if err != nil || strings.TrimSpace(string(b)) != f.SHA256 {
		return false
	}
	return true
}

func writeMarker(marker, sum string) error {
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		return err
	}
	tmp := marker + ".tmp"
	if err := os.WriteFile(tmp, []byte(sum+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, marker)
}

// fetchOne downloads f to its path through <path>.part, resuming, and verifies it.
func fetchOne(ctx context.Context, f File, o Options) (int64, error) {
	src, err := URLFor(f, o.Mirror)
	if err != nil {
		return 0, err
	}
	dst := filepath.Join(o.Dir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	part := dst + ".part"
	var got int64
	for attempt := 1; ; attempt++ {
		n, err := transfer(ctx, src, part, f, o)
		got += n
		if err == nil {
			break
		}
		var broken *brokenError
		if !errors.As(err, &broken) || attempt >= o.Attempts || ctx.Err() != nil {
			return got, err
		}
		fmt.Fprintf(o.Progress, "%s: %v; resuming (attempt %d of %d)\n", f.Path, err, attempt+1, o.Attempts)
	}
	if err := verify(part, src, f); err != nil {
		return got, err
	}
	if err := os.Rename(part, dst); err != nil {
		return got, err
	}
	return got, syncDir(filepath.Dir(dst))
}

// brokenError is a transfer cut short: the next attempt resumes it.
type brokenError struct{ err error }

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// transfer appends to part what it lacks of f: a range request when part holds some
// bytes, a fresh download when the server ignores the range.
func transfer(ctx context.Context, src, part string, f File, o Options) (int64, error) {
	fh, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	have, err := fh.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	if have > f.Size {
		if err := restart(fh); err != nil {
			return 0, err
		}
		have = 0
	}
	if have == f.Size {
		return 0, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return 0, err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, &brokenError{fmt.Errorf("GET %s: %w", src, err)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			return 0, fmt.Errorf("GET %s: the server answered the range from byte %d with %q", src, have, resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusOK:
		if have > 0 {
			fmt.Fprintf(o.Progress, "%s: the server does not resume; fetching it whole\n", f.Path)
			if err := restart(fh); err != nil {
				return 0, err
			}
			have = 0
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		if err := restart(fh); err != nil {
			return 0, err
		}
		return 0, &brokenError{fmt.Errorf("GET %s: the server refused to resume at byte %d", src, have)}
	default:
		return 0, fmt.Errorf("GET %s: %s", src, resp.Status)
	}
	bar := newMeter(o.Progress, o.Bar, f.Path, have, f.Size)
	// One byte more than the file should have tells an oversized answer from a full one.
	n, err := io.Copy(io.MultiWriter(fh, bar), io.LimitReader(resp.Body, f.Size-have+1))
	bar.finish()
	if err != nil {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if serr := fh.Sync(); serr != nil {
			return n, serr
		}
		return n, &brokenError{fmt.Errorf("GET %s: the connection broke after %d of %d bytes: %w", src, have+n, f.Size, err)}
	}
	if err := fh.Sync(); err != nil {
		return n, err
	}
	if have+n < f.Size {
		return n, &brokenError{fmt.Errorf("GET %s: the connection ended after %d of %d bytes", src, have+n, f.Size)}
	}
	return n, nil
}

func restart(fh *os.File) error {
	if err := fh.Truncate(0); err != nil {
		return err
	}
	_, err := fh.Seek(0, io.SeekStart)
	return err
}

// rangeStart reads the first byte of a Content-Range header ("bytes 100-199/200").
func rangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	first, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(first, 10, 64)
	return n, err == nil
}

// verify checks part's size and sum against f, removing part when they differ.
func verify(part, src string, f File) error {
	fh, err := os.Open(part)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(h, fh)
	fh.Close()
	if err != nil {
		return err
	}
	mismatch := func(what, got, want string) error {
		return &MismatchError{Path: f.Path, URL: src, What: what, Got: got, Want: want, RemovedPartial: os.Remove(part) == nil}
	}
	if n != f.Size {
		return mismatch("size", strconv.FormatInt(n, 10)+" bytes", strconv.FormatInt(f.Size, 10)+" bytes")
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		return mismatch("SHA-256", sum, f.SHA256)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lock takes an exclusive lock on path, or fails at once naming it.
func lock(path string) (func(), error) {
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(fh.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		fh.Close()
		return nil, fmt.Errorf("another reactgen data is fetching into %s (it holds %s)", filepath.Dir(filepath.Dir(path)), path)
	}
	return func() { fh.Close() }, nil
}

// checkSpace refuses to start when the folder's file system has less free space than the
// files still to fetch (their unpacked contents need more; see the README).
func checkSpace(dir string, files []File, state string) error {
	var need int64
	for _, f := range files {
		if !done(filepath.Join(state, filepath.FromSlash(f.Path)+".sha256"), f) {
			need += f.Size
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // no figure to check against
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		return fmt.Errorf("%s has %s free, and the files still to fetch take %s (before unpacking)", dir, Human(free), Human(need))
	}
	return nil
}

// meter writes a file's progress: a redrawn bar on a terminal, else a line every 10%.
type meter struct {
	w          io.Writer
	bar        bool
	name       string
	done, size int64
	start      time.Time
	last       time.Time
	lastTenth  int64
	startBytes int64
}

func newMeter(w io.Writer, bar bool, name string, have, size int64) *meter {
	now := time.Now()
	return &meter{w: w, bar: bar, name: name, done: have, size: size, start: now, startBytes: have, lastTenth: have * 10 / size}
}

func (m *meter) Write(p []byte) (int, error) {
	m.done += int64(len(p))
	now := time.Now()
	if m.bar {
		if now.Sub(m.last) >= 200*time.Millisecond {
			m.last = now
			m.draw("\r")
		}
	} else if tenth := m.done * 10 / m.size; tenth > m.lastTenth && tenth < 10 {
		m.lastTenth = tenth
		m.draw("")
		fmt.Fprintln(m.w)
	}
	return len(p), nil
}

func (m *meter) draw(prefix string) {
	const width = 30
	frac := float64(m.done) / float64(m.size)
	frac = min(frac, 1)
	filled := int(frac * width)
	rate := ""
	if secs := time.Since(m.start).Seconds(); secs > 0.5 {
		rate = fmt.Sprintf(" %s/s", Human(int64(float64(m.done-m.startBytes)/secs)))
	}
	fmt.Fprintf(m.w, "%s%s [%s%s] %3.0f%% %s of %s%s", prefix, m.name, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		frac*100, Human(m.done), Human(m.size), rate)
}

func (m *meter) finish() {
	prefix := ""
	if m.bar {
		prefix = "\r"
	}
	m.draw(prefix)
	fmt.Fprintln(m.w)
}

// Human writes a byte count in the largest unit below it.
func Human(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
