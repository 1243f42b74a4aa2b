#include "engine/tokenize/sentencepiecetokenizer.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/core/threads.h"

#include "engine/tokenize/spmshim.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <utility>

namespace engine::tokenize {
namespace {

/// SentencePiece parses repeated fields such as `input` as CSV: quote the path so that commas,
/// spaces and quotes in it survive.
std::string quotedForCsv(const std::string &text)
{
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + '"';
}

/// True when the file holds at least one byte that is not ASCII whitespace. Reads only as far as needed.
bool hasNonWhitespace(const std::filesystem::path &file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw ioError("cannot read the corpus " + file.string());
    std::array<char, 65536> buffer;
    while (in) {
        in.read(buffer.data(), buffer.size());
        const auto end = buffer.begin() + in.gcount();
        if (std::any_of(buffer.begin(), end, [](char c) {
                return c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f';
            }))
            return true;
    }
    if (in.bad())
        throw ioError("cannot read the corpus " + file.string());
    return false;
}

/// The functions of the tunebench_spm module, resolved once per process.
struct SpmApi {
    TbSpmLoad load = nullptr;
    TbSpmClose close = nullptr;
    TbSpmEncode encode = nullptr;
    TbSpmDecode decode = nullptr;
    TbSpmInfo info = nullptr;
    TbSpmPiece piece = nullptr;
    TbSpmTrain train = nullptr;
    TbSpmFree free = nullptr;
};

/// $TUNEBENCH_SPM_MODULE, else the build tree's module, else the installed one.
std::filesystem::path spmModulePath()
{
    return modulePath("TUNEBENCH_SPM_MODULE", TUNEBENCH_SPM_MODULE_BUILD, TUNEBENCH_SPM_MODULE_INSTALL);
}

/// Loads the module on first use; throws Error(Io) naming it when it is missing or broken.
const SpmApi &spm()
{
    static std::once_flag once;
    static SpmApi api;
    static std::string failure;
    std::call_once(once, [] {
        const std::filesystem::path path = spmModulePath();
        // DEEPBIND: SentencePiece must use its bundled protobuf, not libtorch's (see spmshim.h).
        void *module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!module) {
            const char *reason = ::dlerror();
            failure = "cannot load the SentencePiece module " + path.string() + ": " + (reason ? reason : "unknown");
            return;
        }
        auto resolve = [&](auto &function, const char *name) {
            function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(::dlsym(module, name));
            if (!function && failure.empty())
                failure = "the SentencePiece module " + path.string() + " lacks " + name;
        };
        resolve(api.load, "tb_spm_load");
        resolve(api.close, "tb_spm_close");
        resolve(api.encode, "tb_spm_encode");
        resolve(api.decode, "tb_spm_decode");
        resolve(api.info, "tb_spm_info");
        resolve(api.piece, "tb_spm_piece");
        resolve(api.train, "tb_spm_train");
        resolve(api.free, "tb_spm_free");
    });
    if (!failure.empty())
        throw ioError(failure);
    return api;
}

/// Takes ownership of a module-allocated message or buffer and frees it with the module's free.
struct SpmBuffer {
    void *pointer = nullptr;
    SpmBuffer() = default;
    explicit SpmBuffer(void *p) : pointer(p) {}
    SpmBuffer(const SpmBuffer &) = delete;
    SpmBuffer &operator=(const SpmBuffer &) = delete;
    ~SpmBuffer()
    {
        if (pointer)
            spm().free(pointer);
    }
};

/// The module's error message (consumed), or an empty string on success.
std::string takeError(char *error)
{
    if (!error)
        return {};
    const SpmBuffer owner(error);
    return error;
}

/// Byte fallback needs 256 byte pieces plus the meta pieces and the corpus's characters.
constexpr int kByteFallbackMinVocab = 512;

} // namespace

struct SentencePieceTokenizer::Impl {
    void *processor = nullptr; ///< owned; a SentencePieceProcessor inside the module
    int pieceCount = 0;
    ~Impl()
    {
        if (processor)
            spm().close(processor);
    }
};

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceTokenizer &&) noexcept = default;
SentencePieceTokenizer &SentencePieceTokenizer::operator=(SentencePieceTokenizer &&) noexcept = default;
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

SentencePieceTokenizer SentencePieceTokenizer::load(const std::filesystem::path &modelFile)
{
    std::error_code ec;
    if (!std::filesystem::exists(modelFile, ec))
        throw ioError("tokenizer model " + modelFile.string() + " does not exist");
    if (std::filesystem::is_directory(modelFile, ec))
        throw ioError("tokenizer model " + modelFile.string() + " is a folder, not a file");
    const std::string bytes = readFile(modelFile);
    const SpmApi &api = spm();
    auto impl = std::make_unique<Impl>();
    const std::string error = takeError(api.load(bytes.data(), bytes.size(), &impl->processor));
    if (!error.empty())
        throw invalidInput(modelFile.string() + " is not a SentencePiece model (" + error + ")");
    impl->pieceCount = api.info(impl->processor, 0);
    if (impl->pieceCount <= 0)
        throw invalidInput(modelFile.string() + " is not a SentencePiece model (it has no pieces)");
    return SentencePieceTokenizer(std::move(impl));
}

void SentencePieceTokenizer::train(const std::filesystem::path &corpus, const std::filesystem::path &outputModel,
                                   const SentencePieceTrainOptions &options)
{
    if (options.modelType != "bpe" && options.modelType != "unigram")
        throw invalidInput("tokenizer model type must be \"bpe\" or \"unigram\", not \"" + options.modelType + "\"");
    if (options.vocabSize < 16)
        throw invalidInput("tokenizer vocabulary size must be at least 16, not " + std::to_string(options.vocabSize));
    if (options.threads < 0)
        throw invalidInput("tokenizer training threads must be 0 (all cores) or more, not " +
                           std::to_string(options.threads));

    std::error_code ec;
    if (!std::filesystem::exists(corpus, ec))
        throw ioError("corpus " + corpus.string() + " does not exist");
    if (std::filesystem::is_directory(corpus, ec))
        throw ioError("corpus " + corpus.string() + " is a folder, not a text file");
    if (!hasNonWhitespace(corpus))
        throw invalidInput("corpus " + corpus.string() + " is empty or holds only whitespace");

    const int threads = std::clamp(options.threads == 0 ? hardwareThreads() : options.threads, 1, 128);
    // 0 samples every line; SentencePiece refuses samples of 1..100 lines, so small ones round up.
    const int64_t sentences = options.maxSentences <= 0 ? 0 : std::max<int64_t>(options.maxSentences, 101);
    const bool byteFallback = options.vocabSize >= kByteFallbackMinVocab;

    // LLaMA's settings, except that normalization is the identity so that decode(encode(t)) == t.
    // The map API (not a flag string) keeps paths with spaces intact; `input` is parsed as CSV.
    const std::vector<std::pair<std::string, std::string>> args = {
        {"input", quotedForCsv(corpus.string())},
        {"model_type", options.modelType},
        {"vocab_size", std::to_string(options.vocabSize)},
        {"hard_vocab_limit", "false"},
        {"unk_id", "0"},
        {"bos_id", "1"},
        {"eos_id", "2"},
        {"pad_id", "-1"},
        {"normalization_rule_name", "identity"},
        {"add_dummy_prefix", "true"},
        {"remove_extra_whitespaces", "false"},
        {"character_coverage", "1.0"},
        {"byte_fallback", byteFallback ? "true" : "false"},
        {"split_digits", "true"},
        {"allow_whitespace_only_pieces", "true"},
        {"input_sentence_size", std::to_string(sentences)},
        {"shuffle_input_sentence", "true"},
        {"num_threads", std::to_string(threads)},
        {"minloglevel", "2"}, // errors only; SentencePiece logs every step at INFO
    };

    // With an output string and no model_prefix, SentencePiece writes no files (no .model, no .vocab).
    std::vector<const char *> keys;
    std::vector<const char *> values;
    for (const auto &[key, value] : args) {
        keys.push_back(key.c_str());
        values.push_back(value.c_str());
    }
    const SpmApi &api = spm();
    char *model = nullptr;
    size_t modelSize = 0;
    int notFound = 0;
    const std::string message =
        takeError(api.train(keys.data(), values.data(), keys.size(), &model, &modelSize, &notFound));
    if (!message.empty()) {
        if (message.find("sentences_.empty()") != std::string::npos)
            throw invalidInput("corpus " + corpus.string() +
                               " has no usable lines (SentencePiece skips lines longer than 4192 bytes)");
        if (notFound)
            throw ioError("cannot read the corpus " + corpus.string() + ": " + message);
        throw invalidInput("training a tokenizer on " + corpus.string() + " failed: " + message);
    }
    const SpmBuffer owner(model);
    writeFileAtomically(outputModel, std::string_view(model, modelSize));
}

std::vector<int> SentencePieceTokenizer::encode(std::string_view text) const
{
    int *ids = nullptr;
    size_t count = 0;
    const std::string error = takeError(spm().encode(m_impl->processor, text.data(), text.size(), &ids, &count));
    if (!error.empty())
        throw Error(ErrorKind::Internal, "SentencePiece encode failed: " + error);
    const SpmBuffer owner(ids);
    return std::vector<int>(ids, ids + count);
}

std::string SentencePieceTokenizer::decode(const std::vector<int> &ids) const
{
    const int size = vocabSize();
    for (const int id : ids) {
        if (id < 0 || id >= size)
            throw invalidInput("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                               std::to_string(size - 1) + ")");
    }
    char *text = nullptr;
    size_t textSize = 0;
    const std::string error = takeError(spm().decode(m_impl->processor, ids.data(), ids.size(), &text, &textSize));
    if (!error.empty())
        throw Error(ErrorKind::Internal, "SentencePiece decode failed: " + error);
    const SpmBuffer owner(text);
    return std::string(text, textSize);
}

int SentencePieceTokenizer::vocabSize() const { return m_impl->pieceCount; }
int SentencePieceTokenizer::bosId() const { return spm().info(m_impl->processor, 1); }
int SentencePieceTokenizer::eosId() const { return spm().info(m_impl->processor, 2); }
int SentencePieceTokenizer::padId() const { return spm().info(m_impl->processor, 3); }

std::string SentencePieceTokenizer::pieceOf(int id) const
{
    if (id < 0 || id >= vocabSize())
        throw invalidInput("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                           std::to_string(vocabSize() - 1) + ")");
    char *piece = nullptr;
    size_t pieceSize = 0;
    const std::string error = takeError(spm().piece(m_impl->processor, id, &piece, &pieceSize));
    if (!error.empty())
        throw Error(ErrorKind::Internal, "SentencePiece piece lookup failed: " + error);
    const SpmBuffer owner(piece);
    return std::string(piece, pieceSize);
}

} // namespace engine::tokenize
