#pragma once
// The C interface of tunebench_spm, a small module that wraps libsentencepiece.
//
// Why a module: Debian's libsentencepiece bundles its own protobuf-lite and exports its symbols,
// while libtorch loads the system libprotobuf. Linked into one process, whichever comes first in the
// symbol lookup order breaks the other (a crash in static initialisers, or "CHECK failed" when a
// model is parsed). The engine therefore dlopen()s this module with RTLD_LOCAL | RTLD_DEEPBIND, so
// that SentencePiece binds to its own protobuf and nothing leaks into the global scope.
//
// Conventions: functions that can fail return nullptr on success or an error message; every
// returned buffer and message is malloc'd by the module and released with tb_spm_free.

#include <cstddef>

extern "C" {

/// Parses a serialized ModelProto. On success *handle is a processor for tb_spm_close.
char *tb_spm_load(const char *bytes, size_t size, void **handle);
/// Releases a processor from tb_spm_load.
void tb_spm_close(void *handle);
/// Encodes UTF-8 text into *ids (*count of them).
char *tb_spm_encode(const void *handle, const char *text, size_t size, int **ids, size_t *count);
/// Decodes ids (all within the vocabulary) into *text (*size bytes).
char *tb_spm_decode(const void *handle, const int *ids, size_t count, char **text, size_t *size);
/// 0: number of pieces, 1: bos id, 2: eos id, 3: pad id, 4: unk id (-1 when absent).
int tb_spm_info(const void *handle, int what);
/// The piece of an id within the vocabulary.
char *tb_spm_piece(const void *handle, int id, char **piece, size_t *size);
/// Trains with SentencePiece's named options and returns the serialized model (no files written).
/// *notFound is set when SentencePiece could not find or open an input.
char *tb_spm_train(const char *const *keys, const char *const *values, size_t count, char **model, size_t *size,
                   int *notFound);
/// Frees a buffer or message returned by this module.
void tb_spm_free(void *pointer);

/// The signature of each function, for dlsym.
using TbSpmLoad = decltype(&tb_spm_load);
using TbSpmClose = decltype(&tb_spm_close);
using TbSpmEncode = decltype(&tb_spm_encode);
using TbSpmDecode = decltype(&tb_spm_decode);
using TbSpmInfo = decltype(&tb_spm_info);
using TbSpmPiece = decltype(&tb_spm_piece);
using TbSpmTrain = decltype(&tb_spm_train);
using TbSpmFree = decltype(&tb_spm_free);
}
