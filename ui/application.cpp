#include "ui/application.h"

#include "ui/mainwindow.h"
#include "ui/pages/trainpage.h"

#include <QApplication>
#include <QTimer>

namespace ui {

int runApplication(int &argc, char **argv, const ApplicationOptions &options)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("tunebench"));
    QApplication::setApplicationName(QStringLiteral("tunebench"));
    QApplication::setApplicationDisplayName(QStringLiteral("tunebench"));
    QApplication::setApplicationVersion(QStringLiteral(TUNEBENCH_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("tunebench"));

    MainWindow window(QString::fromStdString(options.storePath));
    window.show();
    if (options.startDemo) {
        window.showPage(MainWindow::Page::Train);
        window.trainPage()->useDemo();
        QTimer::singleShot(0, window.trainPage(), &TrainPage::start);
    }
    return QApplication::exec();
}

} // namespace ui
