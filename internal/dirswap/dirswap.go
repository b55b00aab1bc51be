// Package dirswap is reactgen's one way to put a directory written whole in another's
// place: a stage writes its new generation (an index, an export) into a staging folder
// beside the target and Replace moves it in, so that readers find one generation whole,
// never a mix. It consumes the two paths and produces the swap, or an error that leaves
// the target as it was.
package dirswap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Replace puts the directory staged in dir's place. When dir does not exist, staged is
// renamed to it. When it does, the two are exchanged in one atomic step where the file
// system can (renameat2 RENAME_EXCHANGE on Linux), so dir always holds one whole
// generation and processes with files of the old one open read on from it, and the old
// generation, now under staged's name, is removed. Elsewhere dir is first renamed aside
// to a fresh ".<base>.old-*" beside it and staged takes its name: a kill between the two
// renames leaves the old generation there and nothing at dir, for the caller to put back
// (AsideOf's names) or remove, and a failed second rename puts it back at once. A kill
// after the swap leaves the old generation under staged's or the aside's name, which the
// caller's clean-up of stale staging folders removes.
func Replace(staged, dir string) error {
	if _, err := os.Lstat(dir); err != nil {
		return os.Rename(staged, dir)
	}
	switch err := exchangeDirs(staged, dir); {
	case err == nil:
		// staged now holds the old generation.
		if err := os.RemoveAll(staged); err != nil {
			return fmt.Errorf("remove the old %s: %w", dir, err)
		}
		return nil
	case !errors.Is(err, errNoExchange):
		return fmt.Errorf("replace %s: %w", dir, err)
	}
	parent, base := filepath.Split(dir)
	aside, err := os.MkdirTemp(parent, AsidePrefix(base))
	if err != nil {
		return err
	}
	if err := os.Remove(aside); err != nil {
		return err
	}
	if err := os.Rename(dir, aside); err != nil {
		return fmt.Errorf("move the old %s aside: %w", dir, err)
	}
	afterMoveAside()
	if err := os.Rename(staged, dir); err != nil {
		os.Rename(aside, dir)
		return err
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("remove the old %s: %w", dir, err)
	}
	return nil
}

// AsidePrefix is how the names of the folders Replace moves an old base aside to begin:
// ".<base>.old-".
func AsidePrefix(base string) string { return "." + base + ".old-" }

// errNoExchange is exchange's answer on a file system that cannot swap two directories.
var errNoExchange = errors.New("atomic exchange not supported")

// exchangeDirs is exchange; tests replace it to take the two-rename path.
var exchangeDirs = exchange

// afterMoveAside is called between the two renames of the fallback; tests stop there.
var afterMoveAside = func() {}
