# xmitcheck: the two commands a fresh Debian machine needs are `make run`
# (all suites on the default kernel, debian:7.3, in a VM) and `make test`
# (the harness's own tests and the suites on real kernels). Both install
# what is missing first (scripts/deps.sh, as root).

GO      ?= go
KERNEL  ?= debian:7.3
export CGO_ENABLED := 0

.PHONY: all build deps run test unit check bench discriminate clean

all: build

build:
	$(GO) build -o xmitcheck ./cmd/xmitcheck

deps:
	./scripts/deps.sh

# The main job: every suite on $(KERNEL), KTAP in xmitcheck.ktap.
run: deps build
	./xmitcheck run --kernel $(KERNEL) --ktap xmitcheck.ktap ./suites/...

# Static checks, unit tests, the suites on this machine's kernel, the
# integration tests that boot Debian kernels under qemu (native and vng),
# every suite on a kernel without seed 000 (6.12) and one with it (7.3),
# and the proof that a suite fails where its patch is missing. Packages run
# one at a time (-p 1): the suites measure progress on this machine's kernel
# and must not share the two cores with a qemu boot of the vmtest tests.
test: deps build check
	$(GO) test -count=1 -p 1 -timeout 40m ./...
	./xmitcheck run --kernel debian:6.12 --kernel debian:7.3 --ktap xmitcheck.ktap --junit xmitcheck.junit.xml ./suites/...
	$(MAKE) discriminate

# Seed 004 is not in 5.10 (its devmap programs run at enqueue): the
# ordering test must fail there, and say why.
discriminate: build
	@rc=0; ./xmitcheck run --kernel debian:5.10 -run '^TestOrdering$$' ./suites/devmap >discriminate.log 2>&1 || rc=$$?; \
	if [ $$rc -ne 1 ] || ! grep -q "devmap program ran at enqueue time" discriminate.log; then \
		cat discriminate.log; echo "discriminate: want exit 1 and 'devmap program ran at enqueue time' on debian:5.10, got exit $$rc"; exit 1; fi; \
	echo "discriminate: TestOrdering fails on debian:5.10 (devmap program ran at enqueue time), as it must"

# Unit tests only: no root, no VM, no network.
unit:
	$(GO) test -short -count=1 ./...

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@if command -v clang >/dev/null; then \
		$(GO) generate ./... && git diff --exit-code --stat -- '*.o' '*_bpfel*.go' \
		|| { echo "check: committed BPF objects differ from a fresh go generate"; exit 1; }; \
	else echo "check: no clang, BPF objects not regenerated"; fi

bench: deps build
	./xmitcheck bench boot --kernel $(KERNEL) --all-backends -n 5

clean:
	rm -f xmitcheck xmitcheck.ktap xmitcheck.junit.xml discriminate.log
