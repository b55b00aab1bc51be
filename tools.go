//go:build tools

package tools

import (
	_ "github.com/apache/arrow/go/v15/arrow"
	_ "github.com/apache/arrow/go/v15/arrow/array"
	_ "github.com/apache/arrow/go/v15/arrow/ipc"
	_ "github.com/apache/arrow/go/v15/parquet/compress"
	_ "github.com/apache/arrow/go/v15/parquet/file"
	_ "github.com/apache/arrow/go/v15/parquet/pqarrow"
	_ "github.com/go-viper/mapstructure/v2"
	_ "github.com/klauspost/compress/gzip"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
