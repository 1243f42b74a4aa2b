#include "support/tempdir.h"

#include "engine/core/paths.h"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace testing_support {

TempDir::TempDir(const std::string &tag)
{
    std::random_device random;
    m_path = std::filesystem::temp_directory_path()
        / ("tunebench-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
}

TempDir::~TempDir()
{
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

void writeCorpusSlice(const std::filesystem::path &path, size_t bytes)
{
    std::ifstream in(engine::demoCorpusPath(), std::ios::binary);
    std::ostringstream all;
    all << in.rdbuf();
    std::string text = all.str();
    if (text.size() > bytes) {
        const size_t cut = text.rfind('\n', bytes);
        text.resize(cut == std::string::npos ? bytes : cut + 1);
    }
    std::ofstream(path, std::ios::binary) << text;
}

void writeTinyConfig(const std::filesystem::path &folder)
{
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "config.json") << R"({
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "vocab_size": 512,
  "hidden_size": 64,
  "intermediate_size": 128,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "max_position_embeddings": 128,
  "rms_norm_eps": 1e-5,
  "rope_theta": 10000.0,
  "tie_word_embeddings": true,
  "hidden_act": "silu",
  "bos_token_id": 1,
  "eos_token_id": 2
})";
}

void isolateXdgDirs(const std::filesystem::path &root)
{
    for (const char *name : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"}) {
        const auto dir = root / name;
        std::filesystem::create_directories(dir);
        ::setenv(name, dir.c_str(), 1);
    }
}

} // namespace testing_support
