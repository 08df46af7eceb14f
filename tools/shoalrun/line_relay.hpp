// Output relaying for shoalrun: each PE's stdout and stderr arrive on pipes and leave on
// shoalrun's own stdout and stderr a whole line at a time, each line tagged with the PE.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shoal::run {

/// One of shoalrun's output streams. Once a write fails (the reader went away: EPIPE) the sink is
/// marked broken and later output is dropped, so that `shoalrun ... | head` still supervises the
/// job to its end instead of dying of SIGPIPE and leaving the PEs behind.
struct output_sink {
  int fd = -1;          ///< shoalrun's stdout (1) or stderr (2)
  bool broken = false;  ///< a write failed; drop everything from now on

  /// Writes all of `bytes`, waiting out EINTR, short writes and a non-blocking fd that is full.
  void write(std::string_view bytes);
};

/// Relays one PE stream to a sink, a line at a time, each line with `prefix` in front. Lines are
/// written whole, so lines of different PEs never mix within a line. A line longer than
/// `max_line_bytes` is written in pieces of at most that size, each piece a prefixed line of its
/// own (the data is complete, with extra line breaks), so that memory stays bounded per stream.
class line_relay {
 public:
  static constexpr size_t default_max_line_bytes = 64 * 1024;

  line_relay(output_sink* sink, std::string prefix, size_t max_line_bytes = default_max_line_bytes);

  /// Takes the next bytes of the stream; writes every line they complete.
  void feed(std::string_view bytes);
  /// End of stream: writes a partial last line, ending it with a newline.
  void finish();

 private:
  void append_line(std::string& out, std::string_view line) const;

  output_sink* sink_;
  std::string prefix_;
  size_t max_line_bytes_;
  std::string pending_;  ///< the current line so far; never holds a '\n'
};

}  // namespace shoal::run
