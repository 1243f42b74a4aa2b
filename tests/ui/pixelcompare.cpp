#include "pixelcompare.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace uitest {

int expectSameLineToWithinAPixel(const QImage &ours, const QImage &reference, const std::function<bool(QRgb)> &lit)
{
    const auto near = [&](const QImage &image, int column, int row) {
        for (int k = std::max(0, column - 1); k <= std::min(image.width() - 1, column + 1); ++k)
            for (int j = std::max(0, row - 1); j <= std::min(image.height() - 1, row + 1); ++j)
                if (lit(image.pixel(k, j)))
                    return true;
        return false;
    };
    EXPECT_EQ(ours.size(), reference.size());
    int litPixels = 0;
    for (int row = 0; row < std::min(ours.height(), reference.height()); ++row) {
        for (int column = 0; column < std::min(ours.width(), reference.width()); ++column) {
            if (lit(reference.pixel(column, row))) {
                EXPECT_TRUE(near(ours, column, row)) << "the reference's pixel " << column << "," << row << " has none of ours beside it";
            }
            if (lit(ours.pixel(column, row))) {
                EXPECT_TRUE(near(reference, column, row)) << "our pixel " << column << "," << row << " has none of the reference's beside it";
                ++litPixels;
            }
        }
    }
    return litPixels;
}

} // namespace uitest
