package kbuild

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

var buildNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

func validBuildName(name string) error {
	if !buildNameRE.MatchString(name) {
		return fmt.Errorf("build name %q: use letters, digits and . _ + - (it becomes --kernel build:NAME)", name)
	}
	return nil
}

// defaultBuildName is the tree's directory name (or its commit), with a
// word per patch.
func defaultBuildName(tree, commit string, patches []patch) string {
	name := filepath.Base(tree)
	if commit != "" {
		name += "-" + commit[:12]
	}
	for _, p := range patches {
		base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p.name), ".patch"), ".diff")
		name += "+" + p.dir + "-" + base
	}
	return regexp.MustCompile(`[^A-Za-z0-9._+-]`).ReplaceAllString(name, "_")
}

// gitCommit is the checked-out commit of a git tree, "" otherwise.
func gitCommit(ctx context.Context, tree string) string {
	if !isGit(tree) {
		return ""
	}
	out, err := exec.CommandContext(ctx, "git", "-C", tree, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
