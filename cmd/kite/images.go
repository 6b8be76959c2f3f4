package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/agent/runtime/containerd"
	"github.com/kite-project/kite/agent/runtime/cri"
)

// imagesFlags find the containerd the images go to: an endpoint, or the
// one `kite agent --container-runtime=containerd` runs under --root-dir
// (`kite server`'s is under <data-dir>/agent).
type imagesFlags struct {
	rootDir, dataDir, endpoint string
}

func (f *imagesFlags) socket(cmd *cobra.Command) string {
	if f.endpoint != "" {
		return strings.TrimPrefix(f.endpoint, "unix://")
	}
	root := f.rootDir
	if !cmd.Flags().Changed("root-dir") && cmd.Flags().Changed("data-dir") {
		root = filepath.Join(f.dataDir, "agent")
	}
	return containerd.Socket(filepath.Join(root, "containerd"))
}

func newImagesCommand() *cobra.Command {
	var f imagesFlags
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Import and list the images of the node's containerd (--container-runtime=containerd)",
		Long: `Import OCI or docker image archives into the containerd of the node's agent
(the k8s.io namespace, where the CRI finds them) and list its images, for
machines that reach no registry. The containerd is the one Kite runs under
--root-dir (kite agent) or --data-dir (kite server), or the one at
--container-runtime-endpoint. scripts/images builds the test images.`,
	}
	cmd.PersistentFlags().StringVar(&f.rootDir, "root-dir", options.DefaultRootDir, "The agent's --root-dir (its containerd is under <root-dir>/containerd).")
	cmd.PersistentFlags().StringVar(&f.dataDir, "data-dir", "./kite-data", "kite server's --data-dir (its agent's root dir is <data-dir>/agent), when --root-dir is not given.")
	cmd.PersistentFlags().StringVar(&f.endpoint, "container-runtime-endpoint", "", "A containerd socket (unix:///...) instead of the agent's.")
	cmd.AddCommand(&cobra.Command{
		Use:   "import FILE...",
		Short: "Import image archives (OCI layout or docker save) into containerd's k8s.io namespace",
		Long: `Import image archives into containerd's k8s.io namespace, unpacked for the
CRI. It runs containerd's own client, ctr (Debian's containerd package
installs it): ctr --address <socket> -n k8s.io images import FILE.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sock := f.socket(cmd)
			if _, err := exec.LookPath("ctr"); err != nil {
				return fmt.Errorf("kite images import: containerd's ctr is needed: %w", err)
			}
			for _, file := range args {
				if _, err := os.Stat(file); err != nil {
					return fmt.Errorf("kite images import: %w", err)
				}
				c := exec.CommandContext(cmd.Context(), "ctr", "--address", sock, "-n", "k8s.io", "images", "import", file)
				c.Stdout, c.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
				if err := c.Run(); err != nil {
					return fmt.Errorf("kite images import %s into %s: %w", file, sock, err)
				}
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the images the CRI sees, as crictl images does",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listImages(cmd.Context(), cmd.OutOrStdout(), f.socket(cmd))
		},
	})
	return cmd
}

// listImages prints IMAGE, TAG, IMAGE ID and SIZE of every image with a
// tag (an image without one shows <none>), sorted by name.
func listImages(ctx context.Context, out io.Writer, sock string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rt, err := cri.New(ctx, cri.Options{Endpoint: "unix://" + sock, ConnectTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("kite images list: %w", err)
	}
	defer rt.Close()
	imgs, err := rt.ListImages(ctx)
	if err != nil {
		return fmt.Errorf("kite images list: %w", err)
	}
	type row struct{ name, tag, id, size string }
	var rows []row
	for _, img := range imgs {
		id := strings.TrimPrefix(img.Id, "sha256:")
		if len(id) > 13 {
			id = id[:13]
		}
		size := fmt.Sprintf("%.1fMB", float64(img.GetSize())/1e6)
		tags := img.RepoTags
		if len(tags) == 0 {
			tags = []string{"<none>:<none>"}
		}
		for _, t := range tags {
			i := strings.LastIndex(t, ":")
			if i < 0 || strings.Contains(t[i:], "/") {
				rows = append(rows, row{t, "<none>", id, size})
				continue
			}
			rows = append(rows, row{t[:i], t[i+1:], id, size})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name+":"+rows[i].tag < rows[j].name+":"+rows[j].tag })
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tTAG\tIMAGE ID\tSIZE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.tag, r.id, r.size)
	}
	return errors.Join(tw.Flush())
}
