// Waveform files of the cycle model's pipeline handshakes, for gtkwave:
// VCD (IEEE 1364 section 18, written here) or FST (GTKWave's compressed
// format, through the fstapi writer that ships with Verilator).
//
// Use:
//   std::string err;
//   auto w = WaveWriter::open("rx.fst", WaveWriter::Format::Fst, err);
//   uint32_t valid = w->add_signal("nic.rx.parser", "valid", 1);
//   uint32_t qpn   = w->add_signal("nic.rx.parser", "qpn", 24);
//   w->change(0, valid, 0);            // times in ps, non-decreasing
//   w->change(4000, valid, 1);
//   w->change(4000, qpn, 0x12);
//   if (!w->close(err)) ...
//
// Rules and what the file holds:
// - The timescale is 1 ps; times are the `time_ps` given to change().
// - Every signal is declared before the first change(). The scope is a dotted
//   path ("nic.rx.parser") and becomes nested `module` scopes; signals of one
//   scope are listed together in declaration order whatever the order of the
//   add_signal() calls. Scope components and names are printable ASCII
//   without spaces or '.'; a (scope, name) pair is declared once; widths are
//   1..64. A signal wider than one bit is named "name [W-1:0]" in the file.
// - Values are masked to the signal's width. Several changes at one time are
//   fine; for a signal changed more than once at one time the last value is
//   the one recorded (no zero-time glitches), and a value equal to the one
//   already recorded is not written again.
// - The dump starts at the time of the first change(): every signal gets its
//   value at that time, or x if it was not given one (VCD: in $dumpvars;
//   FST: as changes at the file's start time, which is that time). A file
//   closed without any change has every signal x at time 0.
// - FST files are zlib-packed with a compressed hierarchy; gtkwave reads
//   both formats.
//
// Errors:
// - open() returns nullptr and sets `err` when the file cannot be created.
// - Misuse (add_signal() after the first change() or after close(), a bad
//   scope, name or width, a duplicate declaration, change() of an unknown
//   signal, a time earlier than the previous one, change() after close())
//   never aborts: the call is ignored, add_signal() returns kInvalidSignal,
//   and the first such error is kept. ok() turns false, error() holds it,
//   and close() (also a repeated close()) returns false with it in `err`.
// - close() also reports I/O errors (VCD: any failed write, flush or close;
//   FST: a failed seek, or no file left behind; fstapi reports nothing else).
// - The destructor closes the file if close() was not called; errors are
//   then lost.
//
// Not thread safe: one thread uses a writer at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace simnic::model {

class WaveWriter {
public:
    enum class Format { Vcd, Fst };

    static constexpr uint32_t kInvalidSignal = UINT32_MAX;
    static constexpr unsigned kMaxWidth = 64;

    // Creates (truncates) `path`. FST also creates, and removes on close, a
    // scratch file "PATH.hier" beside it.
    static std::unique_ptr<WaveWriter> open(const std::string& path, Format fmt,
                                            std::string& err);

    // "vcd" or "fst" (any case) -> fmt; false otherwise.
    static bool parse_format(std::string_view name, Format& fmt);

    ~WaveWriter();
    WaveWriter(const WaveWriter&) = delete;
    WaveWriter& operator=(const WaveWriter&) = delete;

    // Declares a signal; returns its id (0, 1, 2, ... in call order) or
    // kInvalidSignal (see Errors).
    uint32_t add_signal(const std::string& scope, const std::string& name, unsigned width);

    // Records that `sig` has `value` from `time_ps` on. The first call ends
    // the declarations.
    void change(uint64_t time_ps, uint32_t sig, uint64_t value);

    // Writes what is pending and closes the file. True if the file is
    // complete and no error was recorded; otherwise false with the reason.
    bool close(std::string& err);

    bool ok() const;
    const std::string& error() const;
    Format format() const;
    const std::string& path() const;
    uint32_t signal_count() const;

private:
    struct Impl;
    explicit WaveWriter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::model
