// Build-time tool: renders an SVG icon to a square PNG of the given size with Qt SVG.
//   usage: tunebench_svgtopng ICON.svg SIZE OUT.png
// No QGuiApplication: QSvgRenderer and QPainter on a QImage need no platform plugin, so the
// build runs without a display. The icon has no text, so no font is needed either.
#include <QImage>
#include <QPainter>
#include <QString>
#include <QSvgRenderer>

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s ICON.svg SIZE OUT.png\n", argv[0]);
        return 2;
    }
    const QString input = QString::fromLocal8Bit(argv[1]);
    const QString output = QString::fromLocal8Bit(argv[3]);
    char *end = nullptr;
    const long parsed = std::strtol(argv[2], &end, 10);
    if (*end != '\0' || parsed < 1 || parsed > 4096) {
        std::fprintf(stderr, "svgtopng: SIZE must be a whole number of pixels from 1 to 4096, got '%s'\n", argv[2]);
        return 2;
    }

    QSvgRenderer renderer(input);
    if (!renderer.isValid()) {
        std::fprintf(stderr, "svgtopng: %s is not a readable SVG file\n", argv[1]);
        return 1;
    }
    const int size = static_cast<int>(parsed);
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    {
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        renderer.render(&painter, QRectF(0, 0, size, size));
    }
    if (!image.save(output, "PNG")) {
        std::fprintf(stderr, "svgtopng: cannot write %s\n", argv[3]);
        return 1;
    }
    return 0;
}
