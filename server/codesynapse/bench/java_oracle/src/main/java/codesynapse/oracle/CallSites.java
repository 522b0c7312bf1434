package codesynapse.oracle;

import com.github.javaparser.JavaParser;
import com.github.javaparser.ParseResult;
import com.github.javaparser.ParserConfiguration;
import com.github.javaparser.ast.CompilationUnit;
import com.github.javaparser.ast.Node;
import com.github.javaparser.ast.body.CallableDeclaration;
import com.github.javaparser.ast.expr.MethodCallExpr;
import com.github.javaparser.resolution.declarations.ResolvedMethodDeclaration;
import com.github.javaparser.symbolsolver.JavaSymbolSolver;
import com.github.javaparser.symbolsolver.resolution.typesolvers.CombinedTypeSolver;
import com.github.javaparser.symbolsolver.resolution.typesolvers.JavaParserTypeSolver;
import com.github.javaparser.symbolsolver.resolution.typesolvers.ReflectionTypeSolver;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Every method call of a Java source tree and the declaration JavaParser's symbol solver
 * resolves it to, one JSON object a line:
 * {"file": caller file, "line": 1-based line of the method name, "col": 0-based column,
 *  "name": called name, "decl": declaring file (relative; "" outside the tree: the JDK, a
 *  library), "declLine": line of the declaration's name, "sig": its qualified signature}
 * or, when the solver cannot resolve the call, "error" instead of the declaration.
 *
 * Usage: java -cp ... codesynapse.oracle.CallSites SOURCE_ROOT [SOURCE_ROOT ...] > sites.jsonl
 * (paths are written relative to the first root).
 */
public final class CallSites {
    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: CallSites SOURCE_ROOT [SOURCE_ROOT ...]");
            System.exit(2);
        }
        Path base = Paths.get(args[0]).toAbsolutePath().normalize();
        CombinedTypeSolver solver = new CombinedTypeSolver(new ReflectionTypeSolver());
        for (String a : args) {
            solver.add(new JavaParserTypeSolver(Paths.get(a).toAbsolutePath().normalize()));
        }
        ParserConfiguration cfg = new ParserConfiguration()
                .setLanguageLevel(ParserConfiguration.LanguageLevel.JAVA_17)
                .setSymbolResolver(new JavaSymbolSolver(solver));
        JavaParser parser = new JavaParser(cfg);
        List<Path> files = new ArrayList<>();
        for (String a : args) {
            try (Stream<Path> s = Files.walk(Paths.get(a).toAbsolutePath().normalize())) {
                s.filter(p -> p.toString().endsWith(".java") && !p.getFileName().toString().equals("module-info.java"))
                        .sorted().forEach(files::add);
            }
        }
        PrintWriter out = new PrintWriter(System.out, false, StandardCharsets.UTF_8);
        long resolved = 0, failed = 0;
        for (Path f : files) {
            ParseResult<CompilationUnit> pr = parser.parse(f);
            if (!pr.getResult().isPresent()) {
                System.err.println("unparsed: " + f);
                continue;
            }
            String rel = base.relativize(f).toString().replace('\\', '/');
            for (MethodCallExpr call : pr.getResult().get().findAll(MethodCallExpr.class)) {
                int line = call.getName().getBegin().map(p -> p.line).orElse(-1);
                int col = call.getName().getBegin().map(p -> p.column - 1).orElse(-1);
                StringBuilder sb = new StringBuilder();
                sb.append("{\"file\":").append(q(rel)).append(",\"line\":").append(line)
                        .append(",\"col\":").append(col).append(",\"name\":").append(q(call.getNameAsString()));
                try {
                    ResolvedMethodDeclaration m = call.resolve();
                    String decl = "";
                    int declLine = -1;
                    Optional<Node> ast = m.toAst();
                    if (ast.isPresent() && ast.get() instanceof CallableDeclaration) {
                        CallableDeclaration<?> cd = (CallableDeclaration<?>) ast.get();
                        Optional<CompilationUnit> cu = cd.findCompilationUnit();
                        if (cu.isPresent() && cu.get().getStorage().isPresent()) {
                            Path p = cu.get().getStorage().get().getPath().toAbsolutePath().normalize();
                            decl = base.relativize(p).toString().replace('\\', '/');
                            declLine = cd.getName().getBegin().map(x -> x.line).orElse(-1);
                        }
                    }
                    sb.append(",\"decl\":").append(q(decl)).append(",\"declLine\":").append(declLine)
                            .append(",\"sig\":").append(q(m.getQualifiedSignature()));
                    resolved++;
                } catch (Throwable e) {  // UnsolvedSymbolException, UnsupportedOperationException, ...
                    String msg = e.getClass().getSimpleName();
                    sb.append(",\"error\":").append(q(msg));
                    failed++;
                }
                sb.append('}');
                out.println(sb);
            }
        }
        out.flush();
        System.err.println("files " + files.size() + ", calls resolved " + resolved + ", unresolved " + failed);
    }

    private static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
