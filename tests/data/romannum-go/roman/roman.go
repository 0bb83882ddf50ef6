// Package roman writes whole numbers as Roman numerals.
package roman

import (
	"errors"
	"strings"
)

// ErrRange is returned for a number Roman numerals cannot write: below 1 or above 3999.
var ErrRange = errors.New("roman: number out of range (1 to 3999)")

var numerals = []struct {
	value  int
	symbol string
}{
	{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"},
	{50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"},
}

// ToRoman writes n as a Roman numeral: ToRoman(1994) is "MCMXCIV".
func ToRoman(n int) (string, error) {
	if n < 1 || n > 3999 {
		return "", ErrRange
	}
	var out strings.Builder
	for _, numeral := range numerals {
		for n >= numeral.value {
			out.WriteString(numeral.symbol)
			n -= numeral.value
		}
	}
	return out.String(), nil
}
