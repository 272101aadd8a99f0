package kernels

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Built is a kernel built from source, in the build cache: what
// --kernel build:NAME runs (kernels/kbuild makes it).
type Built struct {
	Name string `json:"name"`
	// Key identifies the inputs: the tree's content, the patches, the
	// config fragments and the recipe.
	Key     string   `json:"key"`
	Tree    string   `json:"tree"`
	Commit  string   `json:"commit,omitempty"`
	Patches []string `json:"patches,omitempty"`
	// Debug are the debug flavours built in (kcsan, kasan, ...).
	Debug   []string `json:"debug,omitempty"`
	Release string   `json:"release"`
	// Took is how long make ran (0 for a cached build).
	Took time.Duration `json:"took"`
	// Dir holds bzImage, config and build.json.
	Dir    string `json:"-"`
	Cached bool   `json:"-"`
}

// Image is the built bzImage.
func (b *Built) Image() string { return filepath.Join(b.Dir, "bzImage") }

// Builds is where finished builds live, beside the kernel cache: a
// directory per key (Built.Key), with a symlink per name.
func (o Options) Builds() (string, error) {
	dir, err := o.cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), "builds"), nil
}

// ReadBuilt reads the finished build in dir.
func ReadBuilt(dir string) (*Built, error) {
	data, err := os.ReadFile(filepath.Join(dir, "build.json"))
	if err != nil {
		return nil, err
	}
	var b Built
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	b.Dir = dir
	if _, err := os.Stat(b.Image()); err != nil {
		return nil, err
	}
	return &b, nil
}

// LookupBuild returns the build called name.
func LookupBuild(name string, o Options) (*Built, error) {
	builds, err := o.Builds()
	if err != nil {
		return nil, err
	}
	b, err := ReadBuilt(filepath.Join(builds, name))
	if err != nil {
		return nil, fmt.Errorf("%w build:%s: no such build in %s: run `xmitcheck kernels build --tree DIR --name %[2]s`",
			ErrUnknownKernel, name, builds)
	}
	b.Name = name
	return b, nil
}
