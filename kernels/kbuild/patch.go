package kbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// patch is one change a build makes to its copy of the tree.
type patch struct {
	dir  string // "revert" or "apply"
	name string // the file or commit it came from
	body string // a unified diff
}

// readPatches reads every --revert and --apply: a patch file, or for a
// revert in a git tree, a commit (its diff, from git show).
func readPatches(ctx context.Context, tree string, revert, apply []string) ([]patch, error) {
	var out []patch
	for _, r := range revert {
		if data, err := os.ReadFile(r); err == nil {
			out = append(out, patch{"revert", r, string(data)})
			continue
		}
		if !isGit(tree) {
			return nil, fmt.Errorf(
				"--revert %s: no such patch file (a commit can only be reverted in a git tree, and %s is not one)", r, tree)
		}
		show := exec.CommandContext(ctx, "git", "-C", tree, "show", "--format=", "--no-color", "--no-ext-diff", r)
		diff, err := show.Output()
		if err != nil || len(bytes.TrimSpace(diff)) == 0 {
			return nil, fmt.Errorf("--revert %s: neither a patch file nor a commit of %s", r, tree)
		}
		out = append(out, patch{"revert", r, string(diff)})
	}
	for _, a := range apply {
		data, err := os.ReadFile(a)
		if err != nil {
			return nil, fmt.Errorf("--apply %s: %w", a, err)
		}
		out = append(out, patch{"apply", a, string(data)})
	}
	return out, nil
}

// applyTo applies (or reverts) the patch in dir, all or nothing: a dry run
// first, so a patch that does not apply leaves dir as it was.
func (p patch) applyTo(ctx context.Context, dir string) error {
	args := []string{"-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-d", dir}
	if p.dir == "revert" {
		args = []string{"-p1", "--batch", "--reverse", "--no-backup-if-mismatch", "-d", dir}
	}
	for _, dry := range []bool{true, false} {
		a := args
		if dry {
			a = append([]string{"--dry-run"}, args...)
		}
		c := exec.CommandContext(ctx, "patch", a...)
		c.Stdin = strings.NewReader(p.body)
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s %s does not apply to the tree: %s",
				ErrBuild, p.dir, p.name, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
