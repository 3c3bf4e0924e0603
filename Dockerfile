# codemode-mcp as a container image: one static root with the stripped binary, the engine its
# sandbox processes run (node's binary and our addon), the libraries they link, CA certificates,
# and nothing else (no shell, no package manager, no curl).
#
#   docker build -t codemode-mcp .
#   docker run --rm --security-opt seccomp=deploy/seccomp.json -p 8080:8080 \
#     -v "$PWD/api.json:/etc/codemode-mcp/config.json:ro" -e CODEMODE_TOKEN codemode-mcp
#
# Every sandbox layer is required (CODEMODE_REQUIRE_SANDBOX_LAYERS=all): under an engine's
# default seccomp profile, which refuses unshare, the server refuses to start and says why; run
# it with deploy/seccomp.json (README.md, "Deploy"). Where no registry is reachable, build a
# Debian 12 base with debootstrap and pass it as BASE (scripts/test-image does).
ARG BASE=debian:bookworm-slim

# --- build: the project's own setup (no test dependencies) and build --------------------------
FROM ${BASE} AS build
WORKDIR /src
# Setup first, alone: its layer (Debian packages, node's release binary from npm) is reused while
# only the sources change.
COPY scripts/setup scripts/setup
COPY isolate/engine/package-lock.json isolate/engine/package-lock.json
# PEM certificates to trust, besides Debian's, while setup fetches node from the npm registry: for
# a build host behind a TLS-inspecting proxy (scripts/test-image passes the host's
# /usr/local/share/ca-certificates/*.crt). Empty by default. Only this step sees them; the
# tarball is checked against its pinned sha512 either way, and the runtime image's CA bundle is
# Debian's.
ARG EXTRA_CA_CERTS=""
RUN set -eu; \
    if [ -n "$EXTRA_CA_CERTS" ]; then \
      apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null; \
      { cat /etc/ssl/certs/ca-certificates.crt; printf '%s\n' "$EXTRA_CA_CERTS"; } > /tmp/build-ca.pem; \
      export CURL_CA_BUNDLE=/tmp/build-ca.pem; \
    fi; \
    scripts/setup; rm -f /tmp/build-ca.pem
COPY . .
# The tested optimisation (-O2, NDEBUG; CODEMODE_CHECK stays on) without debug info, which the
# stripped binary would drop anyway. The tests are configured (proving configure needs no node)
# but only the server is built.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
 && scripts/build codemode-mcp
# The runtime root: the stripped binary and, beside it in engine/, what its sandbox processes run
# (node's release binary from .deps, pinned by isolate/engine/package-lock.json, and our addon;
# strip keeps the dynamic symbols the addon binds to), each library ldd names for the three at the
# path it was found, the CA bundle (also where OpenSSL's default file is), an empty /tmp that the
# sandbox processes mount their empty root on, and a user.
RUN set -eu; out=/runtime; bin="$out/usr/local/bin"; \
    install -D -m 0755 build/codemode-mcp "$bin/codemode-mcp"; \
    install -D -m 0755 "$(readlink -f build/engine/node)" "$bin/engine/node"; \
    install -D -m 0755 build/engine/codemode_isolate.node "$bin/engine/codemode_isolate.node"; \
    strip --strip-unneeded "$bin/codemode-mcp" "$bin/engine/node" "$bin/engine/codemode_isolate.node"; \
    for lib in $(ldd build/codemode-mcp build/engine/node build/engine/codemode_isolate.node | \
                 grep -v ':$' | grep -o '/[^ ]*' | sort -u); do \
      mkdir -p "$out$(dirname "$lib")"; cp -L "$lib" "$out$lib"; \
    done; \
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/ca-certificates.crt"; \
    mkdir -p "$out/usr/lib/ssl" "$out/etc/codemode-mcp"; \
    ln -s /etc/ssl/certs/ca-certificates.crt "$out/usr/lib/ssl/cert.pem"; \
    install -d -m 1777 "$out/tmp"; \
    printf 'root:x:0:0::/:/nonexistent\ncodemode:x:10001:10001::/:/nonexistent\n' > "$out/etc/passwd"; \
    printf 'root:x:0:\ncodemode:x:10001:\n' > "$out/etc/group"; \
    du -sh "$out"

# --- runtime ---------------------------------------------------------------------------------
FROM scratch
COPY --from=build /runtime/ /
USER 10001:10001
# Stateless Streamable HTTP on every interface, so any replica serves any request; a mounted
# config (its ${NAME} references come from the environment: tokens, upstream credentials).
# Any arguments replace these: `--config /etc/codemode-mcp/config.json` alone serves stdio
# (docker run -i), `--sandbox-report` prints the layers.
ENV CODEMODE_REQUIRE_SANDBOX_LAYERS=all
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/codemode-mcp"]
CMD ["--http", "0.0.0.0:8080", "--http-stateless", "--config", "/etc/codemode-mcp/config.json"]
# /healthz from inside: the binary is its own probe (no shell or curl here).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/codemode-mcp", "--healthcheck", "127.0.0.1:8080"]
