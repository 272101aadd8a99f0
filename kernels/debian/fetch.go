package debian

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/xmitcheck/xmitcheck/kernels/internal/cachefile"
)

// Download fetches c's packages into dir with apt-get download, pinned to
// the exact versions Pick chose.
func (a Index) Download(ctx context.Context, dir string, c Choice) error {
	return a.download(ctx, dir, c.Debs())
}

// Unpack checks each of c's packages downloaded into debs against the
// index, extracts it into dir and removes it.
func Unpack(ctx context.Context, debs string, c Choice, dir string) error {
	for _, p := range c.Debs() {
		path, err := checkDeb(debs, p)
		if err != nil {
			return err
		}
		if err := extractDeb(ctx, path, dir); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	return nil
}

// checkDeb finds the downloaded file of p in dir and checks its size and
// SHA256 against the index.
func checkDeb(dir string, p Package) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(dir, p.Name+"_*.deb"))
	if len(matches) != 1 {
		return "", fmt.Errorf("apt-get download left %d files for %s in %s, want 1", len(matches), p.Name, dir)
	}
	path := matches[0]
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Size() != p.Size {
		return "", fmt.Errorf("%s is %d bytes, the index says %d: the download is damaged, try again",
			path, st.Size(), p.Size)
	}
	sum, err := cachefile.SHA256(path)
	if err != nil {
		return "", err
	}
	if sum != p.SHA256 {
		return "", fmt.Errorf("%s has sha256 %s, the index says %s: the download is damaged, try again", path, sum, p.SHA256)
	}
	return path, nil
}

func extractDeb(ctx context.Context, deb, dir string) error {
	out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, dir).CombinedOutput()
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: install dpkg (xmitcheck unpacks Debian kernels with dpkg-deb)", err)
	case err != nil:
		return fmt.Errorf("dpkg-deb -x %s: %v: %s", filepath.Base(deb), err, strings.TrimSpace(string(out)))
	}
	return nil
}
