package roman

import "testing"

func TestToRoman(t *testing.T) {
	cases := []struct {
		in   int
		want string
	}{
		{1, "I"}, {4, "IV"}, {9, "IX"}, {14, "XIV"}, {40, "XL"}, {1994, "MCMXCIV"}, {3999, "MMMCMXCIX"},
	}
	for _, c := range cases {
		got, err := ToRoman(c.in)
		if err != nil || got != c.want {
			t.Errorf("ToRoman(%d) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestToRomanRange(t *testing.T) {
	for _, n := range []int{0, -1, 4000} {
		if _, err := ToRoman(n); err != ErrRange {
			t.Errorf("ToRoman(%d): err = %v, want ErrRange", n, err)
		}
	}
}
