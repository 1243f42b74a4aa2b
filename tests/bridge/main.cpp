// The bridge tests' main: isolates every XDG folder in a temporary directory, then creates the
// QCoreApplication whose event loop delivers the engine thread's queued signals.

#include <QCoreApplication>
#include <QDir>
#include <QTemporaryDir>

#include <gtest/gtest.h>

int main(int argc, char **argv)
{
    QTemporaryDir root(QDir::tempPath() + QStringLiteral("/tunebench-bridge-test-XXXXXX"));
    if (!root.isValid())
        return 2;
    for (const char *variable : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}) {
        const QString dir = root.path() + QLatin1Char('/') + QString::fromLatin1(variable).toLower();
        QDir().mkpath(dir);
        qputenv(variable, dir.toLocal8Bit());
    }
    qputenv("XDG_RUNTIME_DIR", root.path().toLocal8Bit());

    QCoreApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("tunebench-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tunebench-tests"));

    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
