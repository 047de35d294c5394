// net-bench --seal: what the sealed wire (AES-256-GCM per frame, net/wire_crypto.h) costs per
// hop, against --insecure, for a decode frame and a prompt batch of activations.
#pragma once

namespace baton::bench {

// Prints two tables: the cipher alone (seal at the sender plus open at the receiver, i.e. one
// hop's work) and loopback round trips through sealed vs plaintext Node pairs, alternated in
// blocks so both see the same machine load; medians throughout.
void run_seal_cost(int rounds, int n_embd);

}  // namespace baton::bench
