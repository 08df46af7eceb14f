// shoal's one host error type and its codes.
// Every failure of the C++ API is a shoal::error naming the failing call and, for bad input,
// the argument; the C API turns it into a status code or a job abort at its boundary.
#pragma once

#include <stdexcept>
#include <string>

#include "shoal/types.h"

namespace shoal {

/// Error categories; the numeric values are the C API's `SHOAL_ERR_*` codes.
enum class errc : int {
  ok = SHOAL_OK,
  invalid_argument = SHOAL_ERR_INVALID_ARGUMENT,  ///< bad input from the caller (names the argument)
  not_initialized = SHOAL_ERR_NOT_INITIALIZED,    ///< call before init or after finalize
  out_of_memory = SHOAL_ERR_OUT_OF_MEMORY,        ///< symmetric heap exhausted
  mismatch = SHOAL_ERR_MISMATCH,                  ///< PEs disagreed on a collective call
  timeout = SHOAL_ERR_TIMEOUT,                    ///< a bounded wait or rendezvous ran out of time
  peer_failure = SHOAL_ERR_PEER_FAILURE,          ///< another PE died or stopped answering
  system = SHOAL_ERR_SYSTEM,                      ///< an OS call failed (errno in the message)
  cuda = SHOAL_ERR_CUDA,                          ///< a CUDA runtime/driver call failed
  unsupported = SHOAL_ERR_UNSUPPORTED,            ///< valid request this build/backend cannot serve
  internal = SHOAL_ERR_INTERNAL,                  ///< a broken internal invariant (a shoal bug)
};

/// Name of an error code, e.g. "invalid_argument".
SHOAL_API const char* to_string(errc code) noexcept;

/// The exception every C++ entry point throws. `what()` reads
/// "<call>: <message> [<file>:<line>]"; `call()` is the public API function that failed.
class SHOAL_API error : public std::runtime_error {
 public:
  error(errc code, std::string call, std::string message, const char* file = "", int line = 0);

  errc code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  const std::string& message() const noexcept { return message_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  errc code_;
  std::string call_;
  std::string message_;
  const char* file_;
  int line_;
};

}  // namespace shoal
