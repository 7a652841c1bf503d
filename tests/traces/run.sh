#!/usr/bin/env bash
# Traces (contract §6d) read by a decoder that is not ours: two callosums (the debug binary, as
# processes) in a tree, A fanning B over `seren_callosum`, B fanning a stub store, both exporting
# to one OTLP/HTTP receiver on loopback (receiver.py) that decodes each export with the
# OpenTelemetry project's own protobuf classes (`opentelemetry-proto` from PyPI, pinned in
# requirements.txt). A is configured by the standard OTEL_* variables, B by its `telemetry:`
# block. receiver.py says what is checked: one trace from the caller's traceparent down to the
# store, every parent link, names, kinds, attributes, service names, and no query text in any byte
# exported.
#
# Why not a real tracing backend: Jaeger and the OpenTelemetry Collector are Go programs built
# from the Go module proxy, which CI cannot reach (only crates.io, PyPI, npm and Debian are); the
# receiver here speaks the same OTLP/HTTP and decodes it with the reference protobuf definitions.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum, which
# `cargo test` builds). Needs python3 (>= 3.10, with venv). Creates the venv target/traces-venv
# from requirements.txt when it is missing or its pins changed (the only step that uses the
# network).
#
# Ends with one line `traces: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
need "$PYTHON"
venv="$target/traces-venv"
venv --no-deps "$venv" "$here/requirements.txt"
echo "traces: opentelemetry-proto $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("opentelemetry-proto"))')"

scratch
background "$venv/bin/python" "$here/receiver.py" --bin "$SCC_BIN" --work "$work" "$@"
wait "${pids[-1]}"
