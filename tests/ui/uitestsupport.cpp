#include "uitestsupport.h"

#include "engine/core/paths.h"

#include <QDir>
#include <QFile>

namespace uitest {

QString scratchDir()
{
    const QString dir = QDir::cleanPath(qEnvironmentVariable("XDG_DATA_HOME") + QStringLiteral("/../scratch"));
    QDir().mkpath(dir);
    return dir;
}

QString smallCorpus(qint64 bytes)
{
    const QString path = scratchDir() + QStringLiteral("/corpus-%1.txt").arg(bytes);
    if (QFile::exists(path))
        return path;
    QFile in(QString::fromStdString(engine::demoCorpusPath().string()));
    if (!in.open(QIODevice::ReadOnly))
        return {};
    QByteArray text = in.read(bytes);
    if (const qsizetype end = text.lastIndexOf('\n'); end > 0)
        text.truncate(end + 1);
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(text) != text.size())
        return {};
    return path;
}

} // namespace uitest
