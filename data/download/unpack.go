package download

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"cmp"
	"compress/bzip2"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// unpack extracts the archive at path into its folder and removes the archive. Entries
// are staged in a hidden folder beside it and moved into place when the whole archive
// has been read, so a kill mid-way leaves no half-unpacked tree under a real name (the
// next run fetches nothing and unpacks again: the archive stays until the end). Only
// regular files and folders are extracted; a name that leaves the folder is an error.
func unpack(ctx context.Context, path, kind string) error {
	parent := filepath.Dir(path)
	stage := filepath.Join(parent, ".unpack-"+filepath.Base(path))
	if err := os.RemoveAll(stage); err != nil {
		return err
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	var err error
	switch kind {
	case UnpackTarBz2:
		err = untar(ctx, path, stage)
	case UnpackZip:
		err = unzip(ctx, path, stage)
	default:
		err = fmt.Errorf("unknown archive kind %q", kind)
	}
	if err != nil {
		os.RemoveAll(stage)
		return err
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	for _, e := range entries {
		dst := filepath.Join(parent, e.Name())
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(stage, e.Name()), dst); err != nil {
			return err
		}
	}
	if err := os.Remove(stage); err != nil {
		return err
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	return os.Remove(path)
}

// entryPath is where an archive entry named name goes under stage.
func entryPath(stage, name string) (string, error) {
	p := filepath.FromSlash(strings.TrimSuffix(name, "/"))
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return "", fmt.Errorf("entry %q would be written outside the folder", name)
	}
	return filepath.Join(stage, p), nil
}

func untar(ctx context.Context, path, stage string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	// ^C closes the archive, so a long decompression stops at its next read.
	stop := context.AfterFunc(ctx, func() { fh.Close() })
	defer stop()
	tr := tar.NewReader(bzip2.NewReader(bufio.NewReaderSize(fh, 1<<20)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return cmp.Or(ctx.Err(), err)
		}
		dst, err := entryPath(stage, h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeEntry(dst, tr); err != nil {
				return cmp.Or(ctx.Err(), err)
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("entry %q is not a regular file or folder (type %q): refused", h.Name, h.Typeflag)
		}
	}
}

func unzip(ctx context.Context, path, stage string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	stop := context.AfterFunc(ctx, func() { zr.Close() })
	defer stop()
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		dst, err := entryPath(stage, f.Name)
		if err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case mode.IsRegular():
			rc, err := f.Open()
			if err != nil {
				return err
			}
			err = writeEntry(dst, rc)
			rc.Close()
			if err != nil {
				return fmt.Errorf("entry %q: %w", f.Name, cmp.Or(ctx.Err(), err))
			}
		default:
			return fmt.Errorf("entry %q is not a regular file or folder (%v): refused", f.Name, mode)
		}
	}
	return nil
}

func writeEntry(dst string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
