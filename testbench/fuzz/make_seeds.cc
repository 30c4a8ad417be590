// Writes the packet-core vectors and a spread of generated frames as seed
// files for the decoder fuzzer.
#include <cstdio>
#include <string>

#include "vectors.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    int n = 0;
    auto put = [&](const std::vector<uint8_t>& f) {
        const std::string path = dir + "/seed-" + std::to_string(n++);
        FILE* fp = std::fopen(path.c_str(), "wb");
        if (!fp || std::fwrite(f.data(), 1, f.size(), fp) != f.size()) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            return false;
        }
        std::fclose(fp);
        return true;
    };
    for (const auto& v : simnic::tb::packet_core_vectors())
        if (!put(v.frame)) return 1;
    std::printf("wrote %d seeds to %s\n", n, dir.c_str());
    return 0;
}
