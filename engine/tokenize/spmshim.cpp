// tunebench_spm: libsentencepiece behind a C interface (see spmshim.h). Built as a MODULE and
// loaded with dlopen; no engine code, no exceptions across the boundary.

#include "engine/tokenize/spmshim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#define TB_SPM_EXPORT __attribute__((visibility("default")))

namespace {

char *copyOut(const std::string &text, size_t *size = nullptr)
{
    auto *buffer = static_cast<char *>(std::malloc(text.size() + 1));
    if (!buffer)
        return nullptr;
    std::memcpy(buffer, text.data(), text.size());
    buffer[text.size()] = '\0';
    if (size)
        *size = text.size();
    return buffer;
}

char *errorOf(const sentencepiece::util::Status &status)
{
    return status.ok() ? nullptr : copyOut(status.ToString());
}

const sentencepiece::SentencePieceProcessor &processorOf(const void *handle)
{
    return *static_cast<const sentencepiece::SentencePieceProcessor *>(handle);
}

} // namespace

extern "C" {

TB_SPM_EXPORT char *tb_spm_load(const char *bytes, size_t size, void **handle)
{
    try {
        auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
        const auto status = processor->LoadFromSerializedProto(std::string_view(bytes, size));
        if (!status.ok())
            return errorOf(status);
        *handle = processor.release();
        return nullptr;
    } catch (const std::exception &error) {
        return copyOut(error.what());
    }
}

TB_SPM_EXPORT void tb_spm_close(void *handle)
{
    delete static_cast<sentencepiece::SentencePieceProcessor *>(handle);
}

TB_SPM_EXPORT char *tb_spm_encode(const void *handle, const char *text, size_t size, int **ids, size_t *count)
{
    try {
        std::vector<int> result;
        const auto status = processorOf(handle).Encode(std::string_view(text, size), &result);
        if (!status.ok())
            return errorOf(status);
        *ids = static_cast<int *>(std::malloc(std::max<size_t>(1, result.size()) * sizeof(int)));
        if (!*ids)
            return copyOut("out of memory");
        std::memcpy(*ids, result.data(), result.size() * sizeof(int));
        *count = result.size();
        return nullptr;
    } catch (const std::exception &error) {
        return copyOut(error.what());
    }
}

TB_SPM_EXPORT char *tb_spm_decode(const void *handle, const int *ids, size_t count, char **text, size_t *size)
{
    try {
        std::string result;
        const auto status = processorOf(handle).Decode(std::vector<int>(ids, ids + count), &result);
        if (!status.ok())
            return errorOf(status);
        *text = copyOut(result, size);
        return *text ? nullptr : copyOut("out of memory");
    } catch (const std::exception &error) {
        return copyOut(error.what());
    }
}

TB_SPM_EXPORT int tb_spm_info(const void *handle, int what)
{
    const auto &processor = processorOf(handle);
    switch (what) {
    case 0: return processor.GetPieceSize();
    case 1: return processor.bos_id();
    case 2: return processor.eos_id();
    case 3: return processor.pad_id();
    case 4: return processor.unk_id();
    default: return -1;
    }
}

TB_SPM_EXPORT char *tb_spm_piece(const void *handle, int id, char **piece, size_t *size)
{
    try {
        *piece = copyOut(processorOf(handle).IdToPiece(id), size);
        return *piece ? nullptr : copyOut("out of memory");
    } catch (const std::exception &error) {
        return copyOut(error.what());
    }
}

TB_SPM_EXPORT char *tb_spm_train(const char *const *keys, const char *const *values, size_t count, char **model,
                                 size_t *size, int *notFound)
{
    try {
        std::unordered_map<std::string, std::string> args;
        for (size_t i = 0; i < count; ++i)
            args[keys[i]] = values[i];
        std::string serialized;
        const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &serialized);
        *notFound = status.code() == sentencepiece::util::StatusCode::kNotFound ||
                    status.code() == sentencepiece::util::StatusCode::kPermissionDenied;
        if (!status.ok())
            return errorOf(status);
        *model = copyOut(serialized, size);
        return *model ? nullptr : copyOut("out of memory");
    } catch (const std::exception &error) {
        return copyOut(error.what());
    }
}

TB_SPM_EXPORT void tb_spm_free(void *pointer) { std::free(pointer); }
}
