// Package chaos runs the fault test of `kite bench chaos`: it starts
// `kite etcd`, `kite apiserver --etcd-servers` and `kite agent` as separate
// processes of a kite binary, puts a TCP proxy of its own on 127.0.0.1
// between the clients and the API server, runs writers and watchers with
// selectors against it while a schedule of faults fires (SIGKILL and
// restart of the API server, of etcd and of the agent; every proxied
// connection cut; a client that stops reading), and hands what the clients
// saw to package chaoscheck for the verdict. Compaction runs every 10 s
// (the API server's --etcd-compaction-interval).
package chaos
