package exepages

import (
	"reflect"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	const exe = "/usr/local/bin/kite"
	maps := `00400000-02a00000 r-xp 00000000 08:01 1234 /usr/local/bin/kite
02a00000-05800000 r--p 02600000 08:01 1234 /usr/local/bin/kite
05800000-05a00000 rw-p 05400000 08:01 1234 /usr/local/bin/kite
05a00000-05c00000 rw-p 00000000 00:00 0 
c000000000-c004000000 rw-p 00000000 00:00 0 
7f0000000000-7f0000001000 r--s 00000000 08:01 99 /usr/local/bin/kite
7f0000002000-7f0000003000 r--p 00000000 08:01 77 /usr/local/bin/kite-other
7f0000004000-7f0000005000 r--p 00000000 08:01 78 /usr/local/bin/kite (deleted)
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
`
	for _, tc := range []struct {
		name, maps, exe string
		want            []Range
		wantErr         bool
	}{
		{
			name: "code and read-only data of the executable, not its data, bss, shared or other files' mappings",
			maps: maps, exe: exe,
			want: []Range{{0x400000, 0x2a00000}, {0x2a00000, 0x5800000}},
		},
		{
			name: "an executable replaced on disk is matched by the name the kernel gives it",
			maps: maps, exe: exe + " (deleted)",
			want: []Range{{0x7f0000004000, 0x7f0000005000}},
		},
		{
			name: "a path with spaces",
			maps: "00400000-00401000 r-xp 00000000 08:01 1 /opt/my dir/kite\n", exe: "/opt/my dir/kite",
			want: []Range{{0x400000, 0x401000}},
		},
		{
			name: "smaps: a read-only mapping holding anonymous pages (relocated read-only data) is kept",
			maps: `00400000-02a00000 r-xp 00000000 08:01 1234 /usr/local/bin/kite
Size:              38912 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
02a00000-02b00000 r--p 02600000 08:01 1234 /usr/local/bin/kite
Size:               1024 kB
Anonymous:             8 kB
VmFlags: rd mr mw me
02b00000-05800000 r--p 02700000 08:01 1234 /usr/local/bin/kite
Size:              46080 kB
Anonymous:             0 kB
`, exe: exe,
			want: []Range{{0x400000, 0x2a00000}, {0x2b00000, 0x5800000}},
		},
		{
			name: "no mapping of the executable",
			maps: "00400000-00401000 r-xp 00000000 08:01 1 /bin/sh\n", exe: exe,
		},
		{
			name: "a malformed address is an error, not a guess",
			maps: "00400000+00401000 r-xp 00000000 08:01 1 /usr/local/bin/kite\n", exe: exe,
			wantErr: true,
		},
		{
			name: "an empty range is an error",
			maps: "00401000-00401000 r-xp 00000000 08:01 1 /usr/local/bin/kite\n", exe: exe,
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadOnlyMappings(tc.maps, tc.exe)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}
