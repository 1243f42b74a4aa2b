#include "ui/widgets/atomicsave.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QObject>
#include <QTemporaryFile>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ui {

bool saveAtomically(const QString &path, const std::function<bool(const QString &, QString *)> &write, QString *error)
{
    const QFileInfo info(path);
    const QString shown = QDir::toNativeSeparators(info.absoluteFilePath());
    auto fail = [&](const QString &why) {
        if (error)
            *error = QObject::tr("Cannot write %1: %2").arg(shown, why);
        return false;
    };
    if (path.isEmpty() || info.fileName().isEmpty())
        return fail(QObject::tr("no file name given"));
    const QDir dir = info.absoluteDir();
    if (!dir.exists())
        return fail(QObject::tr("the folder %1 does not exist").arg(QDir::toNativeSeparators(dir.absolutePath())));
    if (info.isDir())
        return fail(QObject::tr("it is a folder"));
    QTemporaryFile temporary(dir.filePath(QStringLiteral(".%1.XXXXXX").arg(info.fileName())));
    temporary.setAutoRemove(false);
    if (!temporary.open())
        return fail(QObject::tr("the folder %1 is not writable (%2)")
                        .arg(QDir::toNativeSeparators(dir.absolutePath()), temporary.errorString()));
    const QString temporaryPath = temporary.fileName();
    temporary.close();
    QString why;
    if (!write(temporaryPath, &why) || QFileInfo(temporaryPath).size() == 0) {
        QFile::remove(temporaryPath);
        return fail(why.isEmpty() ? QObject::tr("the file could not be written") : why);
    }
    QFile::setPermissions(temporaryPath, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup
                                             | QFileDevice::ReadOther);
    if (std::rename(QFile::encodeName(temporaryPath).constData(), QFile::encodeName(info.absoluteFilePath()).constData())
        != 0) {
        const QString cause = QString::fromLocal8Bit(std::strerror(errno));
        QFile::remove(temporaryPath);
        return fail(cause);
    }
    return true;
}

} // namespace ui
