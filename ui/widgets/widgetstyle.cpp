#include "ui/widgets/widgetstyle.h"

#include "engine/core/format.h"

#include <QPalette>

#include <QLocale>
#include <QObject>

#include <array>
#include <cstdlib>

namespace ui {

QString formatBytes(qint64 bytes) { return QString::fromStdString(engine::formatBytes(bytes, 1)); }

QString formatExactBytes(qint64 bytes)
{
    return QObject::tr("%1 bytes").arg(QLocale().toString(bytes));
}

QColor textColorOn(const QColor &background)
{
    // Relative luminance (sRGB weights); the threshold favours white on mid tones.
    const double luminance = 0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return luminance > 0.55 ? QColor(20, 20, 20) : QColor(250, 250, 250);
}

bool isDark(const QColor &window)
{
    return window.lightnessF() < 0.5;
}

QColor alarmColor(const QColor &window)
{
    return isDark(window) ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc6, 0x28, 0x28);
}

QColor okColor(const QColor &window)
{
    return isDark(window) ? QColor(0x7b, 0xd8, 0x8f) : QColor(0x2e, 0x7d, 0x32);
}

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

} // namespace ui
