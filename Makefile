# xmitcheck: the two commands a fresh Debian machine needs are `make run`
# (all suites on the default kernel, debian:7.3, in a VM) and `make test`
# (the harness's own tests and the suites on real kernels). Both install
# what is missing first (scripts/deps.sh, as root).

GO      ?= go
KERNEL  ?= debian:7.3
export CGO_ENABLED := 0

.PHONY: all build deps run test test-kernels unit check bench profile discriminate matrix report bisect-demo \
	kselftest lava clean

all: build

build:
	$(GO) build -buildvcs=auto -o xmitcheck ./cmd/xmitcheck

# What to install: every group by default; a target that needs less says
# so (scripts/deps.sh lists the groups).
DEPS ?=
deps:
	./scripts/deps.sh $(DEPS)

# The main job: every suite on $(KERNEL), KTAP in xmitcheck.ktap.
run: DEPS = vm
run: deps build
	./xmitcheck run --kernel $(KERNEL) --ktap xmitcheck.ktap ./suites/...

# What CI runs: the static checks; the harness's own tests (units, VM
# boots under qemu, the CLI end to end, the JSON stream through gotestsum,
# tparse and go-junit-report, and in a VM the one that needs vhost-net,
# which this machine's kernel may lack); every suite on this machine's
# kernel (not judged: a test that fails still fails the run) and on
# debian:5.10, 6.12, 7.3 and 7.3-rt (PREEMPT_RT), where each seed's verdict must be what
# kernels/expectations says; and the negative controls. The suites do not
# run under plain go test here: they judge a kernel, which only the runner
# knows how to expect.
VERDICT_KERNELS ?= --kernel host --kernel debian:5.10 --kernel debian:6.12 --kernel debian:7.3 --kernel debian:7.3-rt
test: deps build check
	$(GO) test -count=1 -p 1 -timeout 40m $$($(GO) list ./... | grep -v /suites/)
	$(GO) test -count=1 -exec '$(CURDIR)/xmitcheck exec --kernel debian:7.3' ./internal/guest/nopreempt ./internal/guest/dropmon ./internal/guest/instrument
	./xmitcheck run $(VERDICT_KERNELS) --ktap xmitcheck.ktap --junit xmitcheck.junit.xml ./suites/...
	$(MAKE) discriminate

# The VM kernels make test boots, fetched: one line each, name, package
# and version, file (CI keys its kernel cache by them).
test-kernels: build
	@./xmitcheck kernels fetch $(filter-out host --kernel,$(VERDICT_KERNELS))

# Negative controls: a kernel without a seed's behaviour, told to have it,
# must fail, and say why. Seed 004 is not in 5.10 (its devmap programs run
# at enqueue): the ordering test fails there with that reason. Seed 000 is
# not in 6.12: its IFF_BACKPRESSURE probe fails the run. Seed 003 is not in
# 5.10, and TestNoStrandedPackets passes there (no stall, seed or not):
# a run of it alone must not call 003 present.
discriminate: build
	@rc=0; ./xmitcheck run --kernel debian:5.10 --expect 004 -run '^TestOrdering$$' ./suites/devmap >discriminate.log 2>&1 || rc=$$?; \
	if [ $$rc -ne 1 ] || ! grep -q "devmap program ran at enqueue time" discriminate.log || ! grep -q "004.*absent (want present)" discriminate.log; then \
		cat discriminate.log; echo "discriminate: want exit 1, 004 absent and 'devmap program ran at enqueue time' on debian:5.10 --expect 004, got exit $$rc"; exit 1; fi; \
	echo "discriminate: debian:5.10 --expect 004 fails: 004 absent (devmap program ran at enqueue time), as it must"
	@rc=0; ./xmitcheck run --kernel debian:6.12 --expect 000 -run '^TestBackpressure$$' ./suites/tun >discriminate.log 2>&1 || rc=$$?; \
	if [ $$rc -ne 1 ] || ! grep -q "000-tun.*absent (want present): IFF_BACKPRESSURE" discriminate.log; then \
		cat discriminate.log; echo "discriminate: want exit 1 and 000-tun absent (IFF_BACKPRESSURE) on debian:6.12 --expect 000, got exit $$rc"; exit 1; fi; \
	echo "discriminate: debian:6.12 --expect 000 fails: 000-tun absent (IFF_BACKPRESSURE probe), as it must"
	@rc=0; ./xmitcheck run --kernel debian:5.10 --expect 003 -run '^TestNoStrandedPackets$$' ./suites/qdisc >discriminate.log 2>&1 || rc=$$?; \
	if [ $$rc -ne 1 ] || ! grep -q "003 error (want present): .*none of them one that shows" discriminate.log; then \
		cat discriminate.log; echo "discriminate: want exit 1 and 003 error (no test that shows it) on debian:5.10 --expect 003 -run TestNoStrandedPackets, got exit $$rc"; exit 1; fi; \
	echo "discriminate: debian:5.10 --expect 003 -run TestNoStrandedPackets fails: 003 error, only tests that pass without the seed ran, as it must"

# Unit tests only: no root needed, no VM, no network, no privileged suite
# (-short skips them even as root).
unit:
	$(GO) test -short -count=1 ./...

# Formatting, vet, tidy modules, the workflow's syntax (actionlint), and
# the committed BPF objects against a fresh go generate.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(GO) tool actionlint
	@if command -v clang >/dev/null; then \
		$(GO) generate ./... && git diff --exit-code --stat -- '*.o' '*_bpfel*.go' \
		|| { echo "check: committed BPF objects differ from a fresh go generate"; exit 1; }; \
	else echo "check: no clang, BPF objects not regenerated"; fi

# Every suite on several kernels at once (default: every catalog kernel and
# the host), into $(MATRIX_OUT); a verdict that differs from
# kernels/expectations fails it. Then `make report` renders the folder(s).
MATRIX_OUT ?= xmitcheck-matrix
MATRIX_KERNELS ?=
REPORT_OUT ?= $(MATRIX_OUT)
matrix: DEPS = vm
matrix: deps build
	./xmitcheck matrix $(MATRIX_KERNELS) --out $(MATRIX_OUT) --check

# One static HTML page, a Markdown reply and a KCIDB report for KernelCI
# from one or more matrix folders (the CI summary job merges every
# kernel's); the verdict table on stdout.
report: build
	mkdir -p $(REPORT_OUT)
	./xmitcheck report -o $(REPORT_OUT)/report.html --markdown $(REPORT_OUT)/report.md \
		--kcidb $(REPORT_OUT)/kcidb.json $(MATRIX_OUT)

# The suites as a kselftest collection (docs/kselftest.md): installed, then
# run by the kernel's own runner in vng on each of $(KSELFTEST_KERNELS) and
# on this machine's kernel, each output parsed by the kernel's kunit.py
# (scripts/kselftest.sh; about 12 min here, under TCG).
KSELFTEST_KERNELS ?= debian:7.3 debian:6.12
kselftest: DEPS = vm vng
kselftest: deps build
	./scripts/kselftest.sh $(KSELFTEST_KERNELS)

# The collection in a LAVA job run by LAVA's own dispatcher (lava-run) on
# $(KERNEL), read back into a report and a KCIDB file (scripts/lava.sh;
# about 5 min here, under TCG).
lava: DEPS = lava
lava: deps build
	./scripts/lava.sh $(KERNEL) lava-out

# Proof that bisection finds a bad commit (not in CI: it builds a kernel,
# 9-14 min the first time): see scripts/bisect-demo.sh.
bisect-demo: build
	./scripts/bisect-demo.sh

# Build, boot and suite times, and where the suites' time goes, written
# into docs/speed.md (scripts/bench.sh; BENCH_TREE=DIR adds a kernel build
# of DIR, BENCH_MATRIX=1 the default matrix, BENCH_COST=1 the cost pass).
bench: DEPS = vm vng
bench: deps build
	KERNEL=$(KERNEL) ./scripts/bench.sh

# Where each test's time goes on $(KERNEL): seconds in setup, traffic,
# waits, teardown and other, per suite and test, the longest first
# (xmitcheck bench profile; make bench writes the table into docs/speed.md).
PROFILE_PKGS ?= ./suites/...
profile: DEPS = vm
profile: deps build
	./xmitcheck bench profile --kernel $(KERNEL) -subtests 2 $(PROFILE_PKGS)

clean:
	rm -rf xmitcheck xmitcheck.ktap xmitcheck.junit.xml discriminate.log $(MATRIX_OUT) kselftest-out lava-out
