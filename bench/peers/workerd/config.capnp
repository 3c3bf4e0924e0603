# workerd peer for bench/compare. The socket address comes from the command line
# (--socket-addr http=127.0.0.1:PORT); bench/compare copies this file, parent.js and the
# synthetic spec.json into one directory and runs `workerd serve --experimental config.capnp`
# (the Worker Loader binding is experimental: workerd refuses it without --experimental).
# "upstream" is the I/O workload's HTTP API: bench/compare points it at its local upstream with
# --external-addr=upstream=127.0.0.1:PORT (the address below is a placeholder, never dialled
# unless the `io` workload runs).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .parent),
    (name = "upstream", external = (address = "127.0.0.1:9", http = ())),
  ],
  sockets = [ (name = "http", http = (), service = "main") ],
);

const parent :Workerd.Worker = (
  modules = [ (name = "parent.js", esModule = embed "parent.js") ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "LOADER", workerLoader = ()),
    (name = "SPEC", text = embed "spec.json"),
    (name = "UPSTREAM", service = "upstream"),
  ],
);
