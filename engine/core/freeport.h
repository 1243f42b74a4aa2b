#pragma once
// A TCP port on 127.0.0.1 that nothing listens on now, as `torchrun --standalone` picks the
// rendezvous port: the kernel's choice for a socket bound to port 0, released at once (another
// process may take it before it is used; rare, and the rendezvous then says the port is in use).

namespace engine {

/// The port, or -1 when no socket could be bound.
int freeLoopbackPort();

} // namespace engine
