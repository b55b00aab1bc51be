package index

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactgen/reactgen/internal/dirswap"
	"github.com/reactgen/reactgen/pipeline"
)

// The names a build uses beside its target <parent>/<base>: ".<base>.lock" (held while
// it builds), ".<base>.building-*" (the index being written) and ".<base>.old-*" (the
// index it replaces, between two renames where the file system cannot swap them).

// removeStale removes what killed earlier builds of the same target left beside it: their
// half-written ".<base>.building-*" folders, and an old index moved aside once the
// target holds an index again. The caller holds the build lock.
func removeStale(parent, base string, log *slog.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return // MkdirTemp reports an unusable parent
	}
	haveIndex := Exists(filepath.Join(parent, base))
	for _, e := range entries {
		name := e.Name()
		stale := strings.HasPrefix(name, "."+base+".building-") || haveIndex && strings.HasPrefix(name, dirswap.AsidePrefix(base))
		if !stale {
			continue
		}
		p := filepath.Join(parent, name)
		if err := os.RemoveAll(p); err != nil {
			log.Warn("index build: remove stale build directory", "path", p, "err", err)
			continue
		}
		log.Info("index build: removed stale build directory", "path", p)
	}
}

// Recover puts back an index that a build of dir killed between its two renames had
// moved aside (see replaceDir), so that readers find it. It does nothing while another
// build holds the lock: that build recovers it.
func Recover(dir string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	parent, base := filepath.Dir(filepath.Clean(dir)), filepath.Base(filepath.Clean(dir))
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	if olds, _ := filepath.Glob(filepath.Join(parent, dirswap.AsidePrefix(base)+"*")); len(olds) == 0 {
		return nil
	}
	lock, err := pipeline.AcquireLockFile(filepath.Join(parent, "."+base+".lock"), "index", dir, "reactgen (recovering the index)")
	var le *pipeline.LockedError
	if errors.As(err, &le) {
		return nil
	}
	if err != nil {
		return err
	}
	defer lock.Remove()
	recoverOld(parent, base, log)
	return nil
}

// recoverOld puts back an index that a build killed between its two renames had moved
// aside (".<base>.old-*") when nothing took its place. The caller holds the build lock.
func recoverOld(parent, base string, log *slog.Logger) {
	dir := filepath.Join(parent, base)
	if _, err := os.Lstat(dir); err == nil {
		return
	}
	olds, _ := filepath.Glob(filepath.Join(parent, dirswap.AsidePrefix(base)+"*"))
	for _, old := range olds {
		if !Exists(old) {
			continue
		}
		if err := os.Rename(old, dir); err != nil {
			log.Warn("index build: restore the index a killed build moved aside", "path", old, "err", err)
			return
		}
		log.Info("index build: restored the index a killed build had moved aside", "from", old, "to", dir)
		return
	}
}

// checkTarget refuses a dir that holds anything unless force, and even with force
// refuses one that holds something other than an index.
func checkTarget(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("build index %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if !Exists(dir) {
		return fmt.Errorf("build index %s: directory is not empty and holds no index", dir)
	}
	if !force {
		return fmt.Errorf("build index %s: %w", dir, ErrExists)
	}
	return nil
}

// replaceDir moves the finished tmp into dir (dirswap.Replace): an existing index is
// swapped with the new one in one atomic exchange where the file system supports it, so
// dir always holds a whole index, and processes that have the old one open read on from
// it; elsewhere the old index is renamed aside first and, if a kill comes between the two
// renames, put back by the next build (recoverOld).
func replaceDir(tmp, dir string, force bool) error {
	if _, err := os.Lstat(dir); err == nil {
		if err := checkTarget(dir, force); err != nil {
			return err
		}
	}
	if err := dirswap.Replace(tmp, dir); err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	return nil
}
