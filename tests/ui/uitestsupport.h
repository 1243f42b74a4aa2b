#pragma once
// Helpers shared by the ui tests.

#include <QString>

namespace uitest {

/// A folder that lives for the whole test program (below the isolated XDG root).
QString scratchDir();
/// The first ~bytes of the bundled demo corpus, cut at a line end, written once to scratchDir().
QString smallCorpus(qint64 bytes = 100 * 1024);

} // namespace uitest
