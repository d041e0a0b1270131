// Package transfer moves bytes between the machines of a Gray cluster: it
// authenticates every connection with the cluster token, and it pulls
// objects (store objects, executables) from one node to another.
//
// # Authentication
//
// Every node-to-node and driver-to-node connection starts with a mutual
// HMAC-SHA256 challenge-response over fresh random nonces ([ClientHandshake],
// [ServerHandshake]): each side proves it holds the token without sending it,
// and a recorded exchange cannot be replayed. [Listen] returns a listener
// whose Accept yields only authenticated connections; [Dial] connects and
// authenticates. A peer without the token gets [ErrUnauthorized].
//
// The handshake authenticates; it does not encrypt, nor protect the bytes
// that follow from an attacker who can rewrite packets in flight. Run a
// cluster on a network you trust (or inside a VPN such as WireGuard).
//
// # Object pull
//
// A [Server] serves the objects of a [Source] (a node's object store through
// [StoreSource], or a directory of executables, [Blobs]). A [Client] fetches
// one by [Key] into a [Sink] ([StoreSink], [DirSink], [Blobs]): it sends the
// key, the server answers with the size and then streams the bytes into the
// [Room] the sink gave: a mapping the client reads straight into, or a
// writer it writes pieces to at their offsets (for the object store: the
// shared-memory file itself, either way, so a fetched array is read
// zero-copy). The
// client keeps authenticated connections per address for reuse, and
// concurrent fetches of one key into one sink share a single transfer.
package transfer
