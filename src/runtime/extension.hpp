// Per-world state of the layers above the runtime (the team table, ...), without the runtime
// including them: a layer registers an extension once, from a static initializer (libshoal is one
// shared library, so every layer's initializers run when it loads); every world then makes one
// instance at the end of init, in registration order, and owns it until finalize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace shoal::detail {

class world_impl;

class world_extension {
 public:
  virtual ~world_extension() = default;
};

struct extension_spec {
  const char* name;
  /// Bytes of words this layer needs in shoal's reserved block of every PE's heap: host memory on host
  /// backends (peers load/store them through the transport), GPU memory on GPU heaps (the CPU reaches
  /// them only through the transport: put/get/atomic at their offset). 0 for none.
  size_t host_words_nbytes;
  /// Makes the world's instance (collective when the layer's init is). `host_words_offset`: heap
  /// offset of this layer's words on every PE, or 0 when it asked for none. Whether the CPU may
  /// load/store them: peer_transport::direct().
  std::unique_ptr<world_extension> (*make)(world_impl& world, uint64_t host_words_offset);
};

/// Registers a layer's extension; returns its key for world_impl::extension(key). Static init only.
size_t register_world_extension(const extension_spec& spec);

}  // namespace shoal::detail
