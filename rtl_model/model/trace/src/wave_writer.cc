// WaveWriter: the format-independent part (declarations, scope tree, time
// steps, last-value-wins and unchanged-value suppression, errors) and two
// back ends, VCD written here and FST through GTKWave's fstapi.
#include "simnic/model/wave_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fstapi.h"

namespace simnic::model {

namespace {

struct Signal {
    std::string scope;
    std::string name;  // as declared
    unsigned width = 1;
    uint64_t mask = 1;
    uint64_t cur = 0;       // last value recorded in the file
    bool known = false;     // false: x so far
    uint64_t pending = 0;   // value at the current time step
    bool dirty = false;     // `pending` set at the current time step
    std::string vcd_id;     // VCD identifier code
    fstHandle fst = 0;      // FST handle
};

// The name as it appears in the file: "name" or "name [W-1:0]".
std::string file_name(const Signal& s) {
    if (s.width == 1) return s.name;
    return s.name + " [" + std::to_string(s.width - 1) + ":0]";
}

class Backend {
public:
    virtual ~Backend() = default;
    virtual void begin_scope(const std::string& name) = 0;
    virtual void end_scope() = 0;
    virtual void declare(Signal& s, uint32_t index) = 0;
    virtual void end_definitions() = 0;
    // The first time step: every signal, x where !known.
    virtual void initial(uint64_t t, const std::vector<Signal>& sigs) = 0;
    virtual void step(uint64_t t) = 0;
    virtual void value(const Signal& s) = 0;
    virtual bool close(std::string& err) = 0;
};

// ---------------------------------------------------------------- VCD

class VcdBackend final : public Backend {
public:
    VcdBackend(FILE* f, std::string path) : f_(f), path_(std::move(path)) {
        buf_.reserve(kFlushAt + 256);
        buf_ +=
            "$version\n   simnic wave writer\n$end\n"
            "$timescale\n   1ps\n$end\n";
    }
    ~VcdBackend() override {
        if (f_) std::fclose(f_);
    }

    void begin_scope(const std::string& name) override {
        buf_ += "$scope module ";
        buf_ += name;
        buf_ += " $end\n";
    }
    void end_scope() override { buf_ += "$upscope $end\n"; }
    void declare(Signal& s, uint32_t index) override {
        // Identifier codes: base 94 over the printable characters '!'..'~'.
        std::string id;
        uint32_t n = index;
        do {
            id += static_cast<char>('!' + n % 94);
            n /= 94;
        } while (n);
        s.vcd_id = id;
        buf_ += "$var wire ";
        buf_ += std::to_string(s.width);
        buf_ += ' ';
        buf_ += s.vcd_id;
        buf_ += ' ';
        buf_ += file_name(s);
        buf_ += " $end\n";
    }
    void end_definitions() override {
        buf_ += "$enddefinitions $end\n";
        maybe_flush();
    }
    void initial(uint64_t t, const std::vector<Signal>& sigs) override {
        stamp(t);
        buf_ += "$dumpvars\n";
        for (const Signal& s : sigs) {
            if (s.known) {
                put_value(s, s.cur);
            } else {
                buf_ += s.width == 1 ? "x" : "bx ";
                buf_ += s.vcd_id;
                buf_ += '\n';
            }
            maybe_flush();
        }
        buf_ += "$end\n";
    }
    void step(uint64_t t) override { stamp(t); }
    void value(const Signal& s) override {
        put_value(s, s.cur);
        maybe_flush();
    }
    bool close(std::string& err) override {
        bool good = write_out();
        if (std::fflush(f_) != 0 || std::ferror(f_)) good = false;
        int e = errno;
        if (std::fclose(f_) != 0) {
            good = false;
            e = errno;
        }
        f_ = nullptr;
        if (!good && io_error_.empty())
            io_error_ = "cannot write " + path_ + ": " + std::strerror(e);
        if (!io_error_.empty()) {
            err = io_error_;
            return false;
        }
        return true;
    }

private:
    static constexpr size_t kFlushAt = 1 << 16;

    void stamp(uint64_t t) {
        buf_ += '#';
        buf_ += std::to_string(t);
        buf_ += '\n';
    }
    void put_value(const Signal& s, uint64_t v) {
        if (s.width == 1) {
            buf_ += v ? '1' : '0';
        } else {
            // Binary without leading zeros (VCD extends with 0 on the left).
            char bits[65];
            int n = 0;
            int top = 63;
            while (top > 0 && !((v >> top) & 1)) --top;
            for (int b = top; b >= 0; --b) bits[n++] = ((v >> b) & 1) ? '1' : '0';
            buf_ += 'b';
            buf_.append(bits, static_cast<size_t>(n));
            buf_ += ' ';
        }
        buf_ += s.vcd_id;
        buf_ += '\n';
    }
    void maybe_flush() {
        if (buf_.size() >= kFlushAt) write_out();
    }
    bool write_out() {
        if (buf_.empty()) return true;
        size_t n = std::fwrite(buf_.data(), 1, buf_.size(), f_);
        bool good = n == buf_.size();
        if (!good && io_error_.empty())
            io_error_ = "cannot write " + path_ + ": " + std::strerror(errno);
        buf_.clear();
        return good;
    }

    FILE* f_;
    std::string path_;
    std::string buf_;
    std::string io_error_;
};

// ---------------------------------------------------------------- FST

class FstBackend final : public Backend {
public:
    FstBackend(void* ctx, std::string path) : ctx_(ctx), path_(std::move(path)) {
        fstWriterSetTimescale(ctx_, -12);  // 1 ps
        fstWriterSetVersion(ctx_, "simnic wave writer");
        fstWriterSetFileType(ctx_, FST_FT_VERILOG);
        // Value changes packed with zlib (fstapi's default). LZ4 is about 20 %
        // faster but the lz4.c shipped with it trips UBSan in the sanitizer
        // build (null pointer plus zero).
        fstWriterSetPackType(ctx_, FST_WR_PT_ZLIB);
    }
    ~FstBackend() override {
        if (ctx_) fstWriterClose(ctx_);
    }

    void begin_scope(const std::string& name) override {
        fstWriterSetScope(ctx_, FST_ST_VCD_MODULE, name.c_str(), nullptr);
    }
    void end_scope() override { fstWriterSetUpscope(ctx_); }
    void declare(Signal& s, uint32_t) override {
        s.fst = fstWriterCreateVar(ctx_, FST_VT_VCD_WIRE, FST_VD_IMPLICIT, s.width,
                                   file_name(s).c_str(), 0);
    }
    void end_definitions() override {}
    void initial(uint64_t t, const std::vector<Signal>& sigs) override {
        // The time change comes first so that the dump starts at `t`. The
        // initial frame is x already, but every signal gets a change at `t`
        // (x where unknown), as VCD's $dumpvars has it: fstapi's reader does
        // not report the frame when the first block has changes at its
        // start, and cannot open a file without any change.
        fstWriterEmitTimeChange(ctx_, t);
        std::string x;
        for (const Signal& s : sigs) {
            if (s.known) {
                value(s);
            } else {
                x.assign(s.width, 'x');
                fstWriterEmitValueChange(ctx_, s.fst, x.data());
            }
        }
    }
    void step(uint64_t t) override { fstWriterEmitTimeChange(ctx_, t); }
    void value(const Signal& s) override {
        fstWriterEmitValueChange64(ctx_, s.fst, s.width, s.cur);
    }
    bool close(std::string& err) override {
        bool seek_failed = fstWriterGetFseekFailed(ctx_) != 0;
        fstWriterClose(ctx_);
        ctx_ = nullptr;
        if (seek_failed) {
            err = "cannot write " + path_ + ": seek failed";
            return false;
        }
        struct stat st {};
        if (::stat(path_.c_str(), &st) != 0 || st.st_size == 0) {
            err = "cannot write " + path_ + ": file missing or empty after close";
            return false;
        }
        return true;
    }

private:
    void* ctx_;
    std::string path_;
};

bool valid_component(const std::string& s) {
    if (s.empty()) return false;
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '.') return false;
    }
    return true;
}

std::vector<std::string> split_scope(const std::string& scope) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        size_t dot = scope.find('.', start);
        parts.push_back(scope.substr(start, dot == std::string::npos ? dot : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

struct ScopeNode {
    std::string name;
    std::vector<std::unique_ptr<ScopeNode>> children;
    std::vector<uint32_t> sigs;

    ScopeNode* child(const std::string& n) {
        for (auto& c : children)
            if (c->name == n) return c.get();
        children.push_back(std::make_unique<ScopeNode>());
        children.back()->name = n;
        return children.back().get();
    }
};

}  // namespace

struct WaveWriter::Impl {
    enum class State { Declaring, Dumping, Closed };

    Format fmt;
    std::string path;
    std::unique_ptr<Backend> backend;
    std::vector<Signal> sigs;
    std::unordered_set<std::string> declared;  // "scope name"
    std::vector<uint32_t> dirty;  // signals changed at cur_time, in call order
    State state = State::Declaring;
    bool first_step = true;       // no time step written yet
    uint64_t cur_time = 0;
    std::string error;

    void fail(std::string msg) {
        if (error.empty()) error = std::move(msg);
    }

    // Writes the scope tree, each scope once, children in order of first
    // appearance, signals in declaration order.
    void end_definitions() {
        ScopeNode root;
        for (uint32_t i = 0; i < sigs.size(); ++i) {
            ScopeNode* n = &root;
            for (const std::string& part : split_scope(sigs[i].scope)) n = n->child(part);
            n->sigs.push_back(i);
        }
        for (auto& c : root.children) emit_scope(*c);
        backend->end_definitions();
        state = State::Dumping;
    }
    void emit_scope(const ScopeNode& n) {
        backend->begin_scope(n.name);
        for (uint32_t i : n.sigs) backend->declare(sigs[i], i);
        for (const auto& c : n.children) emit_scope(*c);
        backend->end_scope();
    }

    // Writes the changes of cur_time.
    void flush_step() {
        if (first_step) {
            for (uint32_t i : dirty) {
                Signal& s = sigs[i];
                s.cur = s.pending;
                s.known = true;
                s.dirty = false;
            }
            dirty.clear();
            backend->initial(cur_time, sigs);
            first_step = false;
            return;
        }
        bool stamped = false;
        for (uint32_t i : dirty) {
            Signal& s = sigs[i];
            s.dirty = false;
            if (s.known && s.cur == s.pending) continue;
            s.cur = s.pending;
            s.known = true;
            if (!stamped) {
                backend->step(cur_time);
                stamped = true;
            }
            backend->value(s);
        }
        dirty.clear();
    }
};

WaveWriter::WaveWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WaveWriter::~WaveWriter() {
    if (impl_ && impl_->state != Impl::State::Closed) {
        std::string ignored;
        close(ignored);
    }
}

std::unique_ptr<WaveWriter> WaveWriter::open(const std::string& path, Format fmt,
                                             std::string& err) {
    auto impl = std::make_unique<Impl>();
    impl->fmt = fmt;
    impl->path = path;
    if (path.empty()) {
        err = "no waveform file name given";
        return nullptr;
    }
    if (fmt == Format::Vcd) {
        FILE* f = std::fopen(path.c_str(), "wb");
        if (!f) {
            err = "cannot create " + path + ": " + std::strerror(errno);
            return nullptr;
        }
        impl->backend = std::make_unique<VcdBackend>(f, path);
    } else {
        errno = 0;
        void* ctx = fstWriterCreate(path.c_str(), 1);
        if (!ctx) {
            int e = errno;
            err = "cannot create " + path + ": " +
                  (e ? std::strerror(e) : "fstWriterCreate failed");
            return nullptr;
        }
        impl->backend = std::make_unique<FstBackend>(ctx, path);
    }
    return std::unique_ptr<WaveWriter>(new WaveWriter(std::move(impl)));
}

bool WaveWriter::parse_format(std::string_view name, Format& fmt) {
    std::string lower;
    for (char c : name)
        lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower == "vcd") {
        fmt = Format::Vcd;
        return true;
    }
    if (lower == "fst") {
        fmt = Format::Fst;
        return true;
    }
    return false;
}

uint32_t WaveWriter::add_signal(const std::string& scope, const std::string& name,
                                unsigned width) {
    Impl& m = *impl_;
    const std::string what = "signal " + scope + "." + name;
    if (m.state == Impl::State::Closed) {
        m.fail("add_signal(" + what + ") after close");
        return kInvalidSignal;
    }
    if (m.state != Impl::State::Declaring) {
        m.fail("add_signal(" + what + ") after the first change");
        return kInvalidSignal;
    }
    for (const std::string& part : split_scope(scope)) {
        if (!valid_component(part)) {
            m.fail(what + ": bad scope \"" + scope +
                   "\" (dotted path of non-empty printable names without spaces)");
            return kInvalidSignal;
        }
    }
    if (!valid_component(name)) {
        m.fail(what + ": bad name \"" + name + "\" (printable, no spaces or '.')");
        return kInvalidSignal;
    }
    if (width < 1 || width > kMaxWidth) {
        m.fail(what + ": width " + std::to_string(width) + " not in 1.." +
               std::to_string(kMaxWidth));
        return kInvalidSignal;
    }
    if (m.sigs.size() >= kInvalidSignal - 1) {
        m.fail(what + ": too many signals");
        return kInvalidSignal;
    }
    if (!m.declared.insert(scope + " " + name).second) {
        m.fail(what + " declared twice");
        return kInvalidSignal;
    }
    Signal s;
    s.scope = scope;
    s.name = name;
    s.width = width;
    s.mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    m.sigs.push_back(std::move(s));
    return static_cast<uint32_t>(m.sigs.size() - 1);
}

void WaveWriter::change(uint64_t time_ps, uint32_t sig, uint64_t value) {
    Impl& m = *impl_;
    if (m.state == Impl::State::Closed) {
        m.fail("change() after close");
        return;
    }
    if (sig >= m.sigs.size()) {
        m.fail("change() of unknown signal id " + std::to_string(sig));
        return;
    }
    if (m.state == Impl::State::Declaring) {
        m.end_definitions();
        m.cur_time = time_ps;
    } else if (time_ps < m.cur_time) {
        m.fail("change() at time " + std::to_string(time_ps) + " ps before time " +
               std::to_string(m.cur_time) + " ps");
        return;
    } else if (time_ps > m.cur_time) {
        m.flush_step();
        m.cur_time = time_ps;
    }
    Signal& s = m.sigs[sig];
    s.pending = value & s.mask;
    if (!s.dirty) {
        s.dirty = true;
        m.dirty.push_back(sig);
    }
}

bool WaveWriter::close(std::string& err) {
    Impl& m = *impl_;
    if (m.state != Impl::State::Closed) {
        if (m.state == Impl::State::Declaring) {
            m.end_definitions();
            m.cur_time = 0;
        }
        if (!m.dirty.empty() || m.first_step) m.flush_step();
        m.state = Impl::State::Closed;
        std::string io_err;
        if (!m.backend->close(io_err)) m.fail(io_err);
        m.backend.reset();
    }
    if (!m.error.empty()) {
        err = m.error;
        return false;
    }
    return true;
}

bool WaveWriter::ok() const { return impl_->error.empty(); }
const std::string& WaveWriter::error() const { return impl_->error; }
WaveWriter::Format WaveWriter::format() const { return impl_->fmt; }
const std::string& WaveWriter::path() const { return impl_->path; }
uint32_t WaveWriter::signal_count() const { return static_cast<uint32_t>(impl_->sigs.size()); }

}  // namespace simnic::model
