#include "ui/application.h"

#include "ui/mainwindow.h"
#include "ui/pages/trainpage.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>

#include <memory>

namespace ui {
namespace {

Theme g_theme = Theme::System;

QPalette darkPalette()
{
    const QColor window(45, 45, 48);
    const QColor base(30, 30, 32);
    const QColor text(230, 230, 230);
    const QColor disabledText(130, 130, 130);
    const QColor highlight(42, 130, 218);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(255, 90, 90));
    p.setColor(QPalette::Light, QColor(70, 70, 74));
    p.setColor(QPalette::Midlight, QColor(58, 58, 62));
    p.setColor(QPalette::Mid, QColor(38, 38, 40));
    p.setColor(QPalette::Dark, QColor(25, 25, 27));
    p.setColor(QPalette::Shadow, QColor(10, 10, 10));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(100, 170, 240));
    p.setColor(QPalette::LinkVisited, QColor(170, 130, 230));
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabledText);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(80, 80, 80));
    return p;
}

} // namespace

QString themeName(Theme theme)
{
    switch (theme) {
    case Theme::Light: return QStringLiteral("light");
    case Theme::Dark: return QStringLiteral("dark");
    case Theme::System: break;
    }
    return QStringLiteral("system");
}

Theme themeFromName(const QString &name)
{
    if (name == QStringLiteral("light"))
        return Theme::Light;
    if (name == QStringLiteral("dark"))
        return Theme::Dark;
    return Theme::System;
}

QPalette themePalette(Theme theme)
{
    if (theme == Theme::Dark)
        return darkPalette();
    if (theme == Theme::Light) {
        const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
        return fusion ? fusion->standardPalette() : QApplication::style()->standardPalette();
    }
    QPalette system; // no role set: resolves to the platform's palette
    system.setResolveMask(0);
    return system;
}

void applyTheme(Theme theme)
{
    g_theme = theme;
    // A palette with no role set makes Qt go back to the platform theme's palette and follow it.
    QApplication::setPalette(themePalette(theme));
}

Theme currentTheme() { return g_theme; }

int runApplication(int &argc, char **argv, const ApplicationOptions &options)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("tunebench"));
    QApplication::setApplicationName(QStringLiteral("tunebench"));
    QApplication::setApplicationDisplayName(QStringLiteral("tunebench"));
    QApplication::setApplicationVersion(QStringLiteral(TUNEBENCH_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.tunebench.Tunebench")); // the installed desktop entry (Wayland app id)

    MainWindow window(QString::fromStdString(options.storePath)); // applies the theme kept in the settings
    window.show();
    if (options.startDemo) {
        window.showPage(MainWindow::Page::Train);
        window.trainPage()->useDemo();
        QTimer::singleShot(0, window.trainPage(), &TrainPage::start);
    }
    return QApplication::exec();
}

} // namespace ui
